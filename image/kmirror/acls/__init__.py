"""ACL sync: the source's ACLs follow the mirrored topics to the target (plan.py: what to add,
pure; sync.py: the check, the sync and its thread in the supervisor)."""

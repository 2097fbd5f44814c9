"""`kmirror check`'s ACL part: the dry-run diff, i.e. exactly the bindings a sync would create
now (kmirror.acls.plan), and the source ACLs it leaves out with the reason. Reads both
clusters' ACLs and changes nothing; a target that cannot take ACLs is the error `run` would
stop with (when the sync was asked for by name) or a warning (MM2's default)."""

from __future__ import annotations

import logging
from typing import Any

from kmirror.acls.plan import AclPlan
from kmirror.acls.sync import AclSync
from kmirror.config.model import MirrorConfig
from kmirror.errors import KmirrorError

log = logging.getLogger(__name__)
QUIET = "its topic is not mirrored"  # counted, not listed: a source has many such ACLs


def acl_plan(config: MirrorConfig) -> AclPlan | None:
    if not config.acls.enabled:
        return None
    sync = AclSync(config)
    try:
        sync.check()
        return sync.plan()
    except KmirrorError as exc:
        if config.acls.explicit:
            raise
        log.warning("acl sync would stay off (on by MM2's default, not asked for): %s", exc)
        return None


def as_json(todo: AclPlan) -> dict[str, Any]:
    return {
        "create": [str(b) for b in todo.create],
        "skipped": [{"acl": str(s.binding), "why": s.why} for s in todo.skipped],
        "wanted": todo.wanted,
    }


def print_acl_plan(config: MirrorConfig, todo: AclPlan | None) -> None:
    if todo is None:
        return
    a = config.acls
    print(
        f"acls: scope {a.scope}, every {a.interval_s:g} s"
        + (", read-only mirror topics" if a.deny_write else "")
        + f": {todo.wanted} binding(s) wanted on the target, {len(todo.create)} to create"
    )
    for binding in todo.create:
        print(f"acl + {binding}")
    quiet = [s for s in todo.skipped if s.why == QUIET]
    for s in todo.skipped:
        if s.why != QUIET:
            print(f"acl not copied: {s.binding}: {s.why}")
    if quiet:
        print(f"acl not copied: {len(quiet)} source ACL(s) of topics that are not mirrored")

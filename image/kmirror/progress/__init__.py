"""The mirror's progress: the book (per source partition: what the target acknowledged and
where it landed), its record on the target's progress topic, and the one reader of that topic
(the mirror on assignment, `kmirror status`, disaster recovery and the validator)."""

"""`kmirror check`'s schema part: the ID mode and, per selected subject, what a sync would do
(both registries are read, nothing is written; a registry that cannot be reached or refuses the
credentials is the error `run` would stop with)."""

from __future__ import annotations

from kmirror.config.model import MirrorConfig
from kmirror.schemas.sync import RegistrySync


def schema_plan(config: MirrorConfig) -> list[dict[str, object]]:
    if config.schemas is None:
        return []
    sync = RegistrySync(config.schemas, config.target_topic)
    try:
        return sync.plan()
    finally:
        sync.close()


def print_schema_plan(config: MirrorConfig, rows: list[dict[str, object]]) -> None:
    s = config.schemas
    if s is None:
        return
    print(
        f"schemas: id mode {s.id_mode}, source registry {s.source.describe()}, target registry "
        f"{s.target.describe()}, {len(rows)} subject(s) selected"
    )
    for r in rows:
        print(
            f"subject {r['subject']} -> {r['target_subject']}  versions {r['versions']} "
            f"(target {r['target_versions']})  {r['action']}"
        )

"""Schema IDs in the comparison (kmirror run with schema registries, docs/schemas.md).

In translate mode the target's records carry the target registry's IDs, so the source's keys
and values are compared with their IDs mapped first: the map is built here, independently of
the mirror's own, by looking each selected source subject's versions up in the target subject
(a pair means the same schema under both IDs). The payloads must then be byte-equal. After the
comparison every schema ID used on the target must resolve in the target registry, to the same
schema as its source ID (preserve: the same ID) resolves to at the source.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kmirror.config.model import MirrorConfig
from kmirror.schemas.registry import Registry
from kmirror.schemas.sync import RegistrySync

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


@dataclass
class SchemaIds:
    """What the validation knows about schema IDs: the source -> target pairs (empty under
    preserve: IDs are compared as they are)."""

    id_mode: str
    pairs: dict[int, int] = field(default_factory=dict)


def prepare(config: MirrorConfig) -> SchemaIds | None:
    """The ID pairs from both registries (read only); None without schema registries."""
    if config.schemas is None:
        return None
    if config.schemas.id_mode == "preserve":
        return SchemaIds("preserve")
    sync = RegistrySync(config.schemas, config.target_topic)
    try:
        return SchemaIds("translate", sync.pairs())
    finally:
        sync.close()


def _rewrite(c: Column, pairs: Mapping[int, int]) -> Column:
    from pyspark.sql import functions as F  # noqa: N812

    # Binary columns: byte 1 the magic byte, bytes 2-5 the ID (big-endian), 6.. the payload.
    mapping = F.create_map(*[F.lit(x).cast("long") for kv in pairs.items() for x in kv])
    wire = (F.length(c) >= 5) & (F.hex(F.substring(c, 1, 1)) == F.lit("00"))
    sid = F.conv(F.hex(F.substring(c, 2, 4)), 16, 10).cast("long")
    target = mapping[sid]
    header = F.unhex(F.concat(F.lit("00"), F.lpad(F.hex(target), 8, "0")))
    rewritten = F.concat(header, F.substring(c, 6, 2**31 - 1))
    return F.when(wire & target.isNotNull(), rewritten).otherwise(c)


def translated(source: DataFrame, ids: SchemaIds | None) -> DataFrame:
    """The source rows with each wire-format key's and value's ID as the target has it."""
    if ids is None or not ids.pairs:
        return source
    from pyspark.sql import functions as F  # noqa: N812

    return source.withColumn("key", _rewrite(F.col("key"), ids.pairs)).withColumn(
        "value", _rewrite(F.col("value"), ids.pairs)
    )


def used_ids(target: DataFrame) -> list[int]:
    """Every schema ID a target key or value names (wire format only)."""
    from pyspark.sql import functions as F  # noqa: N812

    data = target.select(F.explode(F.array("key", "value")).alias("d"))
    wire = data.filter((F.length("d") >= 5) & (F.hex(F.substring("d", 1, 1)) == F.lit("00")))
    ids = wire.select(F.conv(F.hex(F.substring("d", 2, 4)), 16, 10).cast("long").alias("id"))
    return sorted(int(r["id"]) for r in ids.distinct().collect())


def check(config: MirrorConfig, ids: SchemaIds, used: list[int]) -> dict[str, object]:
    """Per ID used on the target: it resolves there, to the schema its source ID has."""
    assert config.schemas is not None
    source, target = Registry(config.schemas.source), Registry(config.schemas.target)
    back = {t: s for s, t in ids.pairs.items()}
    unresolved, different = [], []
    try:
        for tid in used:
            there = target.schema(tid)
            if there is None:
                unresolved.append(tid)
                continue
            sid = back.get(tid, tid) if ids.id_mode == "translate" else tid
            here = source.schema(sid)
            if here is None or (here.schema_str, here.schema_type) != (
                there.schema_str, there.schema_type):  # fmt: skip
                different.append(tid)
    finally:
        source.close()
        target.close()
    return {"id_mode": ids.id_mode, "pairs": len(ids.pairs), "ids_used": len(used),
            "unresolved_ids": unresolved, "different_schema_ids": different}  # fmt: skip

"""Schema IDs in mirrored records: each key and value in the Confluent wire format leaves with
the target's ID for its schema (translate) or the same ID once the target has it (preserve).

An ID without a mapping stops the record where it is: the translator copies the subjects that
use it from the source registry to the target (kmirror.schemas.sync), persists the new pairs
(kmirror.schemas.idstore, acknowledged) and only then lets the record go. So a schema version
is on the target before the first record that uses it, whether the registry poll or the record
got there first. An ID the source registry does not know (or only excluded subjects use) stops
the mirror with a SchemaError naming the record, unless the policy is `copy`: then such records
are copied as they are, counted and logged once per ID. Keys and values not in the wire format
are copied as they are and counted.

The map (`rewrite_map`) is a plain dict[int, int], what the batch path's kernel takes: the
batch path (kmirror.mirror.batch.merger) rewrites whole batches with it, resolves the IDs the
kernel reports unmapped and merges again, and counts plain records through `count_plain`.
"""

from __future__ import annotations

import logging

from prometheus_client import CollectorRegistry, Counter

from kmirror.config.schemas import SchemaSettings
from kmirror.errors import SchemaError
from kmirror.schemas.idstore import IdStore
from kmirror.schemas.sync import RegistrySync
from kmirror.schemas.wire import HEADER_SIZE, MAGIC, UnmappedIdError, rewrite, schema_id

log = logging.getLogger(__name__)


class SchemaMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.plain = Counter(
            "kmirror_schema_records_not_wire_format",
            "Records copied unchanged: neither key nor value in the Confluent wire format",
            ["topic"],
            registry=registry,
        )
        self.unknown = Counter(
            "kmirror_schema_records_unknown_id",
            "Records copied unchanged: a schema ID the source registry does not know (copy)",
            ["topic"],
            registry=registry,
        )
        self.synced = Counter(
            "kmirror_schema_ids_synced",
            "Schema IDs made known to the target on the record path",
            registry=registry,
        )


class SchemaTranslator:
    def __init__(
        self,
        settings: SchemaSettings,
        sync: RegistrySync,
        store: IdStore,
        metrics: SchemaMetrics,
    ) -> None:
        self.settings = settings
        self._sync = sync
        self._store = store
        self._metrics = metrics
        self.ids: dict[int, int] = {}  # source ID -> target ID (persisted)
        self._unknown: dict[int, int] = {}  # copy policy: IDs copied as they are
        self._lookup: dict[int, int] = {}  # ids and _unknown: what rewrite() reads

    @property
    def rewrite_map(self) -> dict[int, int]:
        """What every rewrite uses: `ids` plus the IDs copied as they are under the copy
        policy (mapped to themselves). The batch path's kernel takes this plain dict."""
        return self._lookup

    def start(self) -> None:
        """Read the persisted map (the topic is created when missing)."""
        self.ids.update(self._store.load())
        self._lookup = {**self._unknown, **self.ids}

    def record(
        self, key: bytes | None, value: bytes | None, topic: str, partition: int, offset: int
    ) -> tuple[bytes | None, bytes | None]:
        """The key and value to send for this source record. May block while a schema is
        copied; raises SchemaError."""
        if _plain(key) and _plain(value):
            self._metrics.plain.labels(topic).inc()
            return key, value
        while True:
            try:
                out = rewrite(key, self._lookup), rewrite(value, self._lookup)
            except UnmappedIdError as exc:
                self.resolve(exc.schema_id, topic, f"{topic}[{partition}] offset {offset}")
                continue
            if self._unknown and {schema_id(key), schema_id(value)} & self._unknown.keys():
                self._metrics.unknown.labels(topic).inc()
            return out

    def count_plain(self, topic: str, records: int) -> None:
        """Records copied unchanged, neither key nor value in the wire format (the batch path's
        kernel counts them)."""
        self._metrics.plain.labels(topic).inc(records)

    def resolve(self, sid: int, topic: str, where: str) -> None:
        """Make a source ID known: copy what it needs to the target and persist the pairs
        (then `ids` has it), or apply the unknown-ID policy. The batch path's kernel calls
        this for each ID it reports unmapped, then rewrites the batch with `ids` again."""
        found = self._sync.sync_id(sid)
        if sid in found:
            new = {s: t for s, t in found.items() if self.ids.get(s) != t}
            self._store.save(new)
            self.ids.update(new)
            self._metrics.synced.inc(len(new))
        elif self.settings.unknown_id == "copy":
            log.warning(
                "record %s names schema ID %s, which no selected subject of the source "
                "registry has: such records are copied unchanged (schema unknown-id copy)",
                where, sid,
            )  # fmt: skip
            self._unknown[sid] = sid
        else:
            raise SchemaError(
                f"record {where} names schema ID {sid}, which no selected subject of the "
                f"source registry {self.settings.source.url} has: it cannot be translated, "
                "and nothing from it on was copied. Register the schema at the source, include "
                "its subject (schema subjects), exclude the topic, or set the schema "
                "unknown-id policy to copy (such records then keep their ID, counted)"
            )
        self._lookup = {**self._unknown, **self.ids}

    def close(self) -> None:
        self._store.close()
        self._sync.close()


def _plain(data: bytes | None) -> bool:
    return data is None or len(data) < HEADER_SIZE or data[0] != MAGIC

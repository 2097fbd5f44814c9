"""The supervisor's registry sync: every selected subject copied once before any stream starts
(a failure stops the mirror before it copies a record: a wrong URL, credentials, a conflicting
target subject), then again every sync interval in a thread, so subjects reach the target
whether or not records use them. Records never wait for this poll: a stream copies what a
record needs itself (kmirror.schemas.translator).
"""

from __future__ import annotations

import logging
import threading

from prometheus_client import CollectorRegistry, Counter, Gauge

from kmirror.config.model import MirrorConfig
from kmirror.errors import KmirrorError
from kmirror.schemas.sync import RegistrySync

log = logging.getLogger(__name__)


class SchemaSyncService:
    def __init__(self, config: MirrorConfig, registry: CollectorRegistry) -> None:
        assert config.schemas is not None
        self._interval = config.schemas.sync_interval_s
        self._sync = RegistrySync(config.schemas, config.target_topic)
        self._registered = Counter(
            "kmirror_schema_versions_registered",
            "Schema versions the registry sync registered on the target registry",
            registry=registry,
        )
        self._errors = Counter(
            "kmirror_schema_sync_errors",
            "Registry syncs that failed (retried at the next interval)",
            registry=registry,
        )
        self._counted = 0
        self._subjects = Gauge(
            "kmirror_schema_subjects_synced",
            "Selected source subjects on the target registry after the last sync",
            registry=registry,
        )

    def initial(self) -> None:
        """The first full sync; raises what went wrong (the mirror does not start)."""
        ids = self._sync.sync_all()
        self._count()
        log.info(
            "schema registry sync: %d subject(s), %d schema ID(s) on the target",
            len(self._sync.selected()), len(ids),
        )  # fmt: skip

    def _count(self) -> None:
        self._registered.inc(self._sync.registered - self._counted)
        self._counted = self._sync.registered
        self._subjects.set(len(self._sync.selected()) - len(self._sync.behind()))

    def start(self, stop: threading.Event) -> threading.Thread:
        thread = threading.Thread(
            target=self._loop, args=(stop,), name="kmirror-schema-sync", daemon=True
        )
        thread.start()
        return thread

    def _loop(self, stop: threading.Event) -> None:
        while not stop.wait(self._interval):
            try:
                self._sync.sync_all()
                self._count()
            except KmirrorError as exc:  # a failed poll never stops the mirror: records wait
                self._errors.inc()
                log.error("schema registry sync failed, retrying in %.0fs: %s", self._interval, exc)
        self._sync.close()

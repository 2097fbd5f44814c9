"""The threads the supervisor runs beside one flow's streams: disaster recovery (checkpoints,
group offset sync, heartbeats), the topic config sync, the schema registry sync and the ACL
sync. Each registers its metrics in a registry of its own in the flow
(kmirror.metrics.aggregate adds the `flow` label), so a flow's disaster recovery can be
restarted with new settings by a reload (`restart_dr`) without touching the copy.
"""

from __future__ import annotations

import logging
import threading

from kmirror.acls.sync import AclSyncService
from kmirror.config.model import MirrorConfig
from kmirror.dr.service import DrService
from kmirror.metrics.aggregate import FlowsCollector
from kmirror.mirror.topicconfigs import ConfigSync
from kmirror.schemas.service import SchemaSyncService

log = logging.getLogger(__name__)


class FlowServices:
    def __init__(self, config: MirrorConfig, registries: FlowsCollector) -> None:
        self.config = config
        self._registries = registries
        self._dr: DrService | None = None
        self._schemas: SchemaSyncService | None = None
        if config.schemas is not None:
            self._schemas = SchemaSyncService(config, registries.registry(config.flow, "schemas"))
        self._acls: AclSyncService | None = None
        if config.acls.enabled:
            self._acls = AclSyncService(config, registries.registry(config.flow, "acls"))
        self._configs: ConfigSync | None = None
        self._done: threading.Event | None = None

    def initial(self) -> None:
        """What must be in place before the flow's streams copy: the schemas (by ID) and the
        ACLs (nothing half-done: a refused sync stops here, before any stream)."""
        if self._acls is not None and not self._acls.initial():
            self._acls = None
        if self._schemas is not None:
            self._schemas.initial()

    def start(self, done: threading.Event) -> None:
        self._done = done
        self._start_dr(self.config)
        if self.config.sync_topic_configs:
            self._configs = ConfigSync(
                self.config, self._registries.registry(self.config.flow, "configs")
            )
            self._configs.start(done)
        if self._schemas is not None:
            self._schemas.start(done)
        if self._acls is not None:
            self._acls.start(done)

    def _start_dr(self, config: MirrorConfig) -> None:
        if config.dr.enabled:
            self._dr = DrService(config, self._registries.registry(config.flow, "dr"))
            self._dr.start()

    def restart_dr(self, config: MirrorConfig, grace_s: float) -> None:
        """New disaster-recovery settings (a reload): the old thread stops, a new one starts."""
        self._stop_dr(grace_s)
        self.config = config
        self._start_dr(config)
        log.info("disaster recovery restarted with new settings flow=%s enabled=%s",
                 config.flow, config.dr.enabled)  # fmt: skip

    def reconfigure(self, config: MirrorConfig, grace_s: float) -> None:
        """A reloaded configuration (kmirror.app.reload): the topic config sync follows the
        new selection; disaster recovery restarts when its settings, the selection or the
        topic names changed. The schema and ACL syncs keep theirs (their settings are not
        live: kmirror.config.live)."""
        if self._configs is not None:
            self._configs.reconfigure(config)
        old = self.config
        changed = (config.dr, config.topics, config.rename) != (old.dr, old.topics, old.rename)
        if changed and (old.dr.enabled or config.dr.enabled):
            self.restart_dr(config, grace_s)
        self.config = config

    def _stop_dr(self, grace_s: float) -> None:
        if self._dr is not None:
            self._dr.stop.set()
            self._dr.join(grace_s)
            self._dr = None

    def stop(self, grace_s: float) -> None:
        self._stop_dr(grace_s)

"""ACL sync: the source's ACLs for the mirrored topics (and, in kmirror's full scope, for the
consumer groups and transactional IDs) added to the target, once before the streams start and
then every `sync.topic.acls.interval.seconds` (MM2's setting and default, 600 s) in a thread of
the supervisor, beside topic-config sync.

Before anything is created both clusters are asked whether it can work at all: the source for
an authorizer and DESCRIBE on the cluster for our principal (without an authorizer its ACLs
would read as none), the target for an authorizer and ALTER (kmirror.kafka.acls.Acls.probe,
.probe_source), so a refusal leaves the target as it was. Asked for explicitly, such a
refusal stops the start (exit 2 or 3, the message says what to set or grant); on by MM2's
default only (mm2.properties without `sync.topic.acls.enabled`), it is a warning and the sync
stays off, as MM2 only logs it.

Metrics: `kmirror_acls_missing` (the drift: bindings the source's ACLs call for that the target
lacked at the last look), `kmirror_acls_created_total`, `kmirror_acls_sync_errors_total`.
"""

from __future__ import annotations

import logging
import threading

from prometheus_client import CollectorRegistry, Counter, Gauge

from kmirror.acls.plan import AclPlan, plan
from kmirror.config.model import MirrorConfig
from kmirror.errors import ConfigError, KmirrorError
from kmirror.kafka.acls import Acls
from kmirror.kafka.cluster import Cluster

log = logging.getLogger(__name__)


def mirror_principal(config: MirrorConfig) -> str:
    """The mirror's principal on the target: as configured, else its SASL user's."""
    if config.acls.mirror_principal:
        return config.acls.mirror_principal
    user = config.target.common.get("sasl.username") or config.target.producer.get("sasl.username")
    return f"User:{user}" if user else ""


class AclSync:
    """One look (and, unless a dry run, one change) at a time; no state between them."""

    def __init__(self, config: MirrorConfig) -> None:
        self._config = config
        self.source = Acls(config, "source")
        self.target = Acls(config, "target")
        self.principal = mirror_principal(config)
        if config.acls.deny_write and not self.principal:
            raise ConfigError(
                "kmirror.acls.deny.write needs the mirror's own principal on the target, which "
                "is exempt from the DENY: the target has no SASL user name to take it from; "
                "set kmirror.acls.mirror.principal (--acl-mirror-principal), e.g. "
                "User:CN=kmirror for a certificate"
            )

    def check(self) -> None:
        """Can the source's ACLs be read (an authorizer, DESCRIBE for us) and the target take
        them (an authorizer, ALTER for us)? Raises what is missing."""
        self.source.probe_source()
        self.target.probe()

    def plan(self) -> AclPlan:
        """What a sync would create now (the dry-run diff)."""
        topics = Cluster(self._config, "source").topics()
        return plan(
            self._config, self.source.bindings(), self.target.bindings(), topics, self.principal
        )

    def run_once(self) -> AclPlan:
        """Look, then create what the target lacks (exactly the plan's list)."""
        todo = self.plan()
        self.target.create(list(todo.create))
        for binding in todo.create:
            log.info("acl sync: created %s", binding)
        return todo


class AclSyncService:
    """The supervisor's ACL sync: `initial` before any stream, then `start` a thread."""

    def __init__(self, config: MirrorConfig, registry: CollectorRegistry) -> None:
        self._config = config
        self._sync = AclSync(config)
        self._interval = config.acls.interval_s
        self._missing = Gauge(
            "kmirror_acls_missing",
            "ACL bindings the source's ACLs call for that the target lacked at the last sync "
            "(created by it; non-zero between syncs means drift)",
            registry=registry,
        )
        self._created = Counter(
            "kmirror_acls_created", "ACL bindings ACL sync created on the target",
            registry=registry,
        )  # fmt: skip
        self._errors = Counter(
            "kmirror_acls_sync_errors",
            "ACL syncs that failed (retried at the next interval)",
            registry=registry,
        )

    def initial(self) -> bool:
        """Check the target, then the first sync. False (and a warning) when the target cannot
        take ACLs and the sync was not asked for by name; raises when it was."""
        try:
            self._sync.check()
            self._once()
        except KmirrorError as exc:
            if self._config.acls.explicit:
                raise
            log.warning("acl sync off (on by MM2's default, not asked for): %s", exc)
            return False
        return True

    def _once(self) -> None:
        done = self._sync.run_once()
        self._missing.set(done.missing)
        self._created.inc(len(done.create))
        log.info(
            "acl sync: %d binding(s) wanted on the target, %d created, %d source ACL(s) not "
            "copied", done.wanted, len(done.create), len(done.skipped),
        )  # fmt: skip

    def start(self, stop: threading.Event) -> threading.Thread:
        thread = threading.Thread(
            target=self._loop, args=(stop,), name="kmirror-acl-sync", daemon=True
        )
        thread.start()
        return thread

    def _loop(self, stop: threading.Event) -> None:
        while not stop.wait(self._interval):
            try:
                self._once()
            except KmirrorError as exc:  # never stops the copy: retried at the next interval
                self._errors.inc()
                log.error("acl sync failed, retrying in %.0fs: %s", self._interval, exc)

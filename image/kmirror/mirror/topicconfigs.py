"""Keep target topic configs like the source's, every `sync.topic.configs.interval.seconds`
(MirrorMaker 2's setting and default, 600 s), honouring the config exclude list.

Runs in the supervisor (one thread per kmirror process; the streams copy records only). Each
source override (a topic-level config set on the source, not a broker default) that is not
excluded must have the same effective value on the target.

Which target topics kmirror may change: those whose configs matched the source's when this
process first saw them — a topic kmirror created (with the source's configs) or adopted from an
identical state — and that kmirror keeps identical from then on. A target topic that differed
at first sight was configured by someone else: kmirror does not touch it and reports the
drift as a warning and as `kmirror_topics_drifted_configs{topic}`. Setting its configs to the
source's once hands it to kmirror. Target-only overrides (a longer retention on a DR cluster)
are never removed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping

from confluent_kafka import KafkaException
from prometheus_client import CollectorRegistry, Counter, Gauge

from kmirror.config.model import MirrorConfig
from kmirror.kafka import clients
from kmirror.kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
)

log = logging.getLogger(__name__)

ADMIN_TIMEOUT_S = 30.0
Configs = dict[str, str]


def drift(source: Mapping[str, str], target: Mapping[str, str]) -> Configs:
    """The source values the target does not have (target-only keys are not drift)."""
    return {k: v for k, v in source.items() if target.get(k) != v}


class ConfigSync:
    def __init__(self, config: MirrorConfig, registry: CollectorRegistry) -> None:
        self._config = config
        self._source: AdminClient | None = None
        self._target: AdminClient | None = None
        self._ours: set[str] = set()  # target topics kmirror keeps like the source
        self._foreign: set[str] = set()  # differed at first sight: reported, never changed
        self._reported: set[str] = set()  # topics with a drift gauge
        self._drift = Gauge(
            "kmirror_topics_drifted_configs",
            "Topic configs that differ from the source's on a target topic kmirror did not "
            "create (reported, not changed)",
            ["topic"],
            registry=registry,
        )
        self._synced = Counter(
            "kmirror_topics_synced_configs",
            "Topic configs set on the target to follow a change on the source",
            registry=registry,
        )

    def reconfigure(self, config: MirrorConfig) -> None:
        """A reloaded configuration: the next pass syncs the topics it selects."""
        self._config = config

    def _admin(self, side: clients.Side) -> AdminClient:
        if side == "source":
            self._source = self._source or clients.admin(self._config, side)
            return self._source
        self._target = self._target or clients.admin(self._config, side)
        return self._target

    # -- one pass ------------------------------------------------------------------------------

    def pairs(self) -> dict[str, str]:
        """Selected source topic -> its target topic, for target topics that exist."""
        src = self._admin("source").list_topics(timeout=ADMIN_TIMEOUT_S).topics
        dst = self._admin("target").list_topics(timeout=ADMIN_TIMEOUT_S).topics
        selected = self._config.topics.select({n for n, t in src.items() if t.error is None})
        mapping = {s: self._config.target_topic(s) for s in selected}
        return {s: d for s, d in mapping.items() if d in dst and dst[d].error is None}

    def run_once(self, new_only: bool = False) -> None:
        """Compare (and for kmirror's topics, fix) every mirrored topic; with new_only, only
        classify target topics this process has not seen yet."""
        pairs = self.pairs()
        if new_only:
            pairs = {s: d for s, d in pairs.items() if d not in self._ours | self._foreign}
        if not pairs:
            return
        source = self._describe("source", list(pairs), overrides_only=True)
        target = self._describe("target", list(pairs.values()), overrides_only=False)
        fixes: dict[str, Configs] = {}
        for src, dst in pairs.items():
            if src not in source or dst not in target:
                continue  # deleted meanwhile
            diff = drift(source[src], target[dst])
            if dst not in self._ours:
                # First sight, or still someone else's: identical now means kmirror's from now.
                if diff:
                    self._foreign.add(dst)
                else:
                    self._foreign.discard(dst)
                    self._ours.add(dst)
            if dst in self._ours:
                if dst in self._reported:
                    self._drift.remove(dst)
                    self._reported.discard(dst)
                if diff:
                    fixes[dst] = diff
                continue
            self._drift.labels(dst).set(len(diff))
            self._reported.add(dst)
            log.warning(
                "target topic %s differs from source topic %s in %s; kmirror did not create it "
                "and leaves it alone: set these configs on the target to the source's values "
                "once and kmirror keeps them in step",
                dst,
                src,
                ", ".join(f"{k} (source {v}, target {target[dst].get(k, 'unset')})"
                          for k, v in sorted(diff.items())),
            )  # fmt: skip
        if fixes:
            self._alter(fixes)

    def _describe(
        self, side: clients.Side, topics: list[str], overrides_only: bool
    ) -> dict[str, Configs]:
        resources = [ConfigResource(ConfigResource.Type.TOPIC, t) for t in topics]
        out: dict[str, Configs] = {}
        futures = self._admin(side).describe_configs(resources, request_timeout=ADMIN_TIMEOUT_S)
        for res, fut in futures.items():
            try:
                entries = fut.result()
            except KafkaException as exc:
                log.warning("could not read %s configs of topic %s: %s", side, res.name, exc)
                continue
            out[res.name] = {
                name: str(e.value)
                for name, e in entries.items()
                if e.value is not None
                and not self._config.excluded_config(name)
                and (not overrides_only or e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
            }
        return out

    def _alter(self, fixes: Mapping[str, Configs]) -> None:
        resources = [
            ConfigResource(
                ConfigResource.Type.TOPIC,
                topic,
                incremental_configs=[
                    ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
                    for k, v in sorted(configs.items())
                ],
            )
            for topic, configs in fixes.items()
        ]
        futures = self._admin("target").incremental_alter_configs(
            resources, request_timeout=ADMIN_TIMEOUT_S
        )
        for res, fut in futures.items():
            try:
                fut.result()
            except KafkaException as exc:
                log.warning("could not update configs of target topic %s: %s", res.name, exc)
                continue
            changed = fixes[res.name]
            self._synced.inc(len(changed))
            log.info(
                "synced topic configs topic=%s %s",
                res.name,
                ",".join(f"{k}={v}" for k, v in sorted(changed.items())),
            )

    # -- the loop ------------------------------------------------------------------------------

    def start(self, stop: threading.Event) -> threading.Thread:
        thread = threading.Thread(
            target=self._loop, args=(stop,), name="kmirror-config-sync", daemon=True
        )
        thread.start()
        return thread

    def _loop(self, stop: threading.Event) -> None:
        # New target topics are classified soon after they appear (while they still have the
        # configs kmirror created them with); the full comparison runs every sync interval.
        interval = self._config.sync_topic_configs_interval_s
        tick = min(self._config.refresh_topics_interval_s, interval)
        next_full = time.monotonic()
        while True:
            full = time.monotonic() >= next_full
            if full:
                next_full = time.monotonic() + interval
            try:
                self.run_once(new_only=not full)
            except Exception as exc:  # a sync failure must never stop the mirror
                log.warning("topic config sync failed, retrying: %s", exc)
            if stop.wait(tick):
                return

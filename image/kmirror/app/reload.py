"""Reloading a running mirror's configuration: on SIGHUP, and (opt-in, --reload-on-change) when
a file it was loaded from changes, e.g. a Kubernetes ConfigMap update, which swaps the mounted
file through a symlink.

The configuration is loaded again exactly as at start (the same options, environment and
files: `ConfigSource.load`) and compared with the running one (kmirror.config.live). What may
change live is handed to the streams through their orders (kmirror.app.channel: new topic
patterns at the next topic refresh, in the same consumer group, from the committed offsets;
throttles; the log level) and to the services (disaster recovery restarts with its new
settings). Anything else that differs refuses the whole reload with one line naming each such
setting; an invalid configuration is refused with its error. Either way the old configuration
keeps running and the process stays up. Every reload is logged and counted in
`kmirror_reloads_total{outcome}`: applied, unchanged, refused, invalid.

A reload runs in its own thread, woken by the signal relay (kmirror.app.lifeline: nothing runs
inside the signal handler) or by the file watch, never in the supervisor's loop.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter

from kmirror.config.live import Reload, compare_flows
from kmirror.config.model import MirrorConfig
from kmirror.errors import KmirrorError
from kmirror.kafka.cluster import Cluster

log = logging.getLogger(__name__)

WATCH_INTERVAL_S = 5.0  # how often the files are looked at (--reload-on-change)
LIST_TIMEOUT_S = 10.0  # listing the source's topics, to check a new topic mapping
OUTCOMES = ("applied", "unchanged", "refused", "invalid")

Apply = Callable[[list[MirrorConfig]], None]
Look = tuple[tuple[int, ...] | None, str | None]  # a file's stat signature and content hash


@dataclass(frozen=True)
class ConfigSource:
    """How the running configuration was loaded, to load it again."""

    load: Callable[[], Sequence[MirrorConfig]]
    files: tuple[str, ...] = ()  # the files it was read from (watched with `watch`)
    watch: bool = False


class FileWatch:
    """Notices a changed file: a new inode, size or mtime, and then a new content hash (a file
    touched or replaced by an identical one is no change). A file that cannot be read counts
    as changed (the reload then says why it cannot load it)."""

    def __init__(self, paths: Sequence[str]) -> None:
        self._paths = tuple(paths)
        self._seen = {p: self._look(p, None) for p in self._paths}

    def changed(self) -> list[str]:
        out = []
        for path in self._paths:
            now = self._look(path, self._seen[path])
            if now[1] != self._seen[path][1]:
                out.append(path)
            self._seen[path] = now
        return out

    @staticmethod
    def _look(path: str, before: Look | None) -> Look:
        """The hash is read again only when the stat signature moved."""
        try:
            st = os.stat(path)  # follows the symlink a ConfigMap volume swaps
        except OSError:
            return None, None
        signature = (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns)
        if before is not None and before[0] == signature:
            return before
        try:
            with open(path, "rb") as fh:
                return signature, hashlib.sha256(fh.read()).hexdigest()
        except OSError:
            return None, None


def mirrored_topics(config: MirrorConfig) -> list[str]:
    """The source topics a running flow mirrors: those its selection matches now."""
    return config.topics.select(set(Cluster(config, "source", LIST_TIMEOUT_S).topics()))


class Reloader:
    """Loads, compares and applies (through `apply`, the supervisor's) or refuses."""

    def __init__(
        self,
        source: ConfigSource,
        running: Sequence[MirrorConfig],
        apply: Apply,
        registry: CollectorRegistry,
        mirrored: Callable[[MirrorConfig], list[str]] = mirrored_topics,
        interval_s: float = WATCH_INTERVAL_S,
    ) -> None:
        self._source = source
        self.running = list(running)
        self._apply = apply
        self._mirrored = mirrored
        self._interval = interval_s
        self._wake = threading.Event()
        self._watch = FileWatch(source.files) if source.watch and source.files else None
        self._count = Counter(
            "kmirror_reloads",
            "Configuration reloads (SIGHUP, a changed file) by outcome: applied, unchanged, "
            "refused (a setting that needs a restart changed), invalid (the new configuration "
            "did not load)",
            ["outcome"],
            registry=registry,
        )
        for outcome in OUTCOMES:
            self._count.labels(outcome)
        if self._watch is not None:
            log.info("reloading the configuration when these files change: %s",
                     ", ".join(source.files))  # fmt: skip
        elif source.watch:
            log.warning(
                "--reload-on-change: the configuration was read from no file (flags and "
                "environment only), so there is nothing to watch; SIGHUP still reloads"
            )

    def request(self) -> None:
        """SIGHUP (from the signal relay's thread): reload soon, in the reload thread."""
        self._wake.set()

    def start(self, done: threading.Event) -> None:
        threading.Thread(
            target=self._loop, args=(done,), name="kmirror-reload", daemon=True
        ).start()

    def _loop(self, done: threading.Event) -> None:
        while not done.is_set():
            signalled = self._wake.wait(self._interval)
            if done.is_set():
                return
            if signalled:
                self._wake.clear()
                self.reload("SIGHUP")
            elif self._watch is not None and (paths := self._watch.changed()):
                self.reload(f"{', '.join(paths)} changed")

    def reload(self, why: str) -> str:
        """Load, compare, apply or refuse; the outcome (one of OUTCOMES), logged and counted."""
        try:
            outcome = self._reload(why)
        except Exception:  # the thread must outlive a bug: the next SIGHUP is tried again
            log.exception("reload (%s) failed; the running configuration stays", why)
            outcome = "invalid"
        self._count.labels(outcome).inc()
        return outcome

    def _reload(self, why: str) -> str:
        try:
            new = list(self._source.load())
        except KmirrorError as exc:
            log.error("reload (%s) refused, the new configuration is invalid: %s; the running "
                      "configuration stays", why, exc)  # fmt: skip
            return "invalid"
        try:
            verdicts = compare_flows(self.running, new, self._topics_of(new))
        except KmirrorError as exc:
            log.error("reload (%s) refused, the new topic mapping cannot be checked against the "
                      "mirrored topics: %s; the running configuration stays", why, exc)  # fmt: skip
            return "refused"
        several = len(verdicts) > 1
        refused = tuple(
            f"{flow}: {name}" if several else name
            for flow, verdict in verdicts.items()
            for name in verdict.refused
        )
        if refused:
            log.error("%s", Reload(refused=refused).refusal(why))
            return "refused"
        by_flow = {c.flow: c for c in new}
        ordered = [by_flow[c.flow] for c in self.running]
        changed = {flow: v.changed for flow, v in verdicts.items() if v.changed}
        if not changed:
            log.info("reload (%s): the configuration is unchanged", why)
            return "unchanged"
        for config in ordered:
            for note in config.notes:
                log.warning("config: %s", note)
        self._apply(ordered)
        self.running = ordered
        for flow, names in changed.items():
            log.info("reload (%s) applied flow=%s changed=%s", why, flow, ",".join(names))
        return "applied"

    def _topics_of(self, new: Sequence[MirrorConfig]) -> dict[str, list[str]]:
        """The mirrored source topics of each flow whose topic mapping changes (only those
        ask the source cluster). A ClusterError refuses the reload: it cannot be checked."""
        mappings = {c.flow: c.rename.mapping for c in new}
        return {
            c.flow: self._mirrored(c)
            for c in self.running
            if c.flow in mappings and mappings[c.flow] != c.rename.mapping
        }

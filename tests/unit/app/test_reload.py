"""A reload of the running configuration (kmirror.app.reload), without brokers: applied,
refused or invalid, logged and counted; and the file watch a ConfigMap update trips."""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from queue import Queue

import pytest
from prometheus_client import CollectorRegistry

from kmirror.app.channel import Orders
from kmirror.app.control import FlowControl
from kmirror.app.reload import ConfigSource, FileWatch, Reloader
from kmirror.app.streamproc import Follower, StreamLink
from kmirror.config.model import ClusterConfig, MirrorConfig, TopicSelection
from kmirror.config.throttle import ThrottleSettings, parse_throttle
from kmirror.config.topicmap import TopicMapping
from kmirror.control.gate import Gate
from kmirror.errors import ClusterError, ConfigError
from tests.kafkatools import wait_until
from tests.unit.app.test_supervisor import config

pytestmark = pytest.mark.unit


class Harness:
    """A reloader whose loads return `self.next` (or raise it) and whose applies are kept."""

    def __init__(self, running: MirrorConfig, mirrored: Sequence[str] = ()) -> None:
        self.next: MirrorConfig | ConfigError = running
        self.applied: list[list[MirrorConfig]] = []
        self.registry = CollectorRegistry()
        self.asked: list[str] = []
        self.unreachable = False  # the source cannot list its topics

        def mirrored_topics(c: MirrorConfig) -> list[str]:
            self.asked.append(c.flow)
            if self.unreachable:
                raise ClusterError("source unreachable")
            return list(mirrored)

        self.reloader = Reloader(
            ConfigSource(self._load), [running], self.applied.append, self.registry,
            mirrored=mirrored_topics,
        )  # fmt: skip

    def _load(self) -> list[MirrorConfig]:
        if isinstance(self.next, Exception):
            raise self.next
        assert isinstance(self.next, MirrorConfig)
        return [self.next]

    def count(self, outcome: str) -> float:
        value = self.registry.get_sample_value("kmirror_reloads_total", {"outcome": outcome})
        assert value is not None
        return value


def test_live_changes_are_applied_logged_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    h = Harness(config(topics=TopicSelection(include=("a",))))
    h.next = config(topics=TopicSelection(include=("a", "b")), log_level="DEBUG")
    with caplog.at_level(logging.INFO, "kmirror.app.reload"):
        assert h.reloader.reload("SIGHUP") == "applied"
    assert h.applied == [[h.next]] and h.reloader.running == [h.next]
    assert "reload (SIGHUP) applied flow=source->target changed=topics,log_level" in caplog.text
    assert h.count("applied") == 1 and h.count("refused") == 0
    assert h.asked == []  # no topic mapping changed: the source is not asked


def test_the_same_configuration_is_unchanged_and_nothing_is_applied() -> None:
    h = Harness(config())
    assert h.reloader.reload("SIGHUP") == "unchanged"
    assert h.applied == [] and h.count("unchanged") == 1


def test_a_setting_that_needs_a_restart_refuses_the_whole_reload(
    caplog: pytest.LogCaptureFixture,
) -> None:
    running = config()
    h = Harness(running)
    h.next = dataclasses.replace(
        running,
        source=ClusterConfig("source", "127.0.0.1:9"),
        num_streams=4,
        log_level="DEBUG",  # live, but nothing of a refused reload applies
    )
    with caplog.at_level(logging.INFO, "kmirror.app.reload"):
        assert h.reloader.reload("SIGHUP") == "refused"
    assert h.applied == [] and h.reloader.running == [running]
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert lines == [
        "reload refused (SIGHUP): source.bootstrap_servers, num_streams cannot change while "
        "kmirror runs; restart kmirror to apply them (the running configuration stays, nothing "
        "of the new one was applied)"
    ]
    assert h.count("refused") == 1


def test_an_invalid_configuration_is_refused_with_its_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    h = Harness(config())
    h.next = ConfigError("num.streams must be >= 1")
    assert h.reloader.reload("/etc/kmirror/mm2/mm2.properties changed") == "invalid"
    assert h.applied == [] and h.count("invalid") == 1
    assert (
        "reload (/etc/kmirror/mm2/mm2.properties changed) refused, the new configuration is "
        "invalid: num.streams must be >= 1; the running configuration stays" in caplog.text
    )


def test_a_new_mapping_is_checked_against_the_mirrored_topics() -> None:
    running = config()

    def mapped(*pairs: tuple[str, str]) -> MirrorConfig:
        rename = dataclasses.replace(running.rename, mapping=TopicMapping(explicit=pairs))
        return dataclasses.replace(running, rename=rename)

    h = Harness(running, mirrored=["orders"])
    h.next = mapped(("orders", "orders.v2"))  # orders is on the target under its old name
    assert h.reloader.reload("SIGHUP") == "refused"
    assert h.asked == [running.flow]
    h.next = mapped(("invoices", "billing.invoices"))  # not mirrored yet
    assert h.reloader.reload("SIGHUP") == "applied"
    h.unreachable = True  # a new mapping that cannot be checked is refused
    h.next = mapped(("invoices", "billing.invoices"), ("refunds", "billing.refunds"))
    assert h.reloader.reload("SIGHUP") == "refused"


def test_a_request_wakes_the_reload_thread() -> None:
    h = Harness(config())
    h.next = config(log_level="WARN")
    done = threading.Event()
    h.reloader.start(done)
    try:
        h.reloader.request()
        wait_until(lambda: h.applied, 10, 0.05, "the requested reload")
        assert h.applied == [[h.next]]
    finally:
        done.set()
        h.reloader.request()


def test_a_configmap_style_symlink_swap_is_a_change(tmp_path: Path) -> None:
    # What the kubelet does: the file is a symlink into `..data`, itself a symlink to a
    # timestamped directory; an update writes a new directory and swaps `..data` atomically.
    def version(name: str, text: str) -> None:
        (tmp_path / name).mkdir()
        (tmp_path / name / "mm2.properties").write_text(text, encoding="utf-8")
        (tmp_path / "..data_tmp").symlink_to(name)
        os.replace(tmp_path / "..data_tmp", tmp_path / "..data")

    version("..2026_01", "a->b.topics = orders\n")
    (tmp_path / "mm2.properties").symlink_to("..data/mm2.properties")
    path = str(tmp_path / "mm2.properties")
    watch = FileWatch([path])
    assert watch.changed() == []
    version("..2026_02", "a->b.topics = orders\n")
    assert watch.changed() == []  # a new file with the same bytes is no change
    version("..2026_03", "a->b.topics = orders|payments\n")
    assert watch.changed() == [path]
    assert watch.changed() == []


# The supervisor's way: SIGHUP relayed to a thread; a burst of them never hangs the process.
HANGUP_LOOP = """
import signal, sys, threading
from kmirror.app.lifeline import relay_signals
count = 0
lock = threading.Lock()
def hangup():
    global count
    with lock:
        count += 1
relay_signals({signal.SIGHUP: hangup})
print("ready", flush=True)
sys.stdin.readline()
print("alive", count > 0, flush=True)
"""


def test_sighup_is_relayed_to_a_thread_and_the_process_stays_up() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", HANGUP_LOOP],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdin is not None
        assert proc.stdout.readline() == "ready\n"
        for _ in range(100):
            proc.send_signal(signal.SIGHUP)
        threading.Event().wait(0.5)
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == "alive True\n"
        assert proc.wait(20) == 0
    finally:
        proc.kill()
        proc.wait()


def test_a_changed_file_reloads_without_a_signal(tmp_path: Path) -> None:
    path = tmp_path / "mm2.properties"
    path.write_text("log level INFO\n", encoding="utf-8")
    levels = {"log level INFO\n": "INFO", "log level WARN\n": "WARN"}
    applied: list[list[MirrorConfig]] = []

    def load() -> list[MirrorConfig]:
        return [config(log_level=levels[path.read_text(encoding="utf-8")])]

    source = ConfigSource(load, (str(path),), watch=True)
    reloader = Reloader(source, load(), applied.append, CollectorRegistry(), interval_s=0.05)
    done = threading.Event()
    reloader.start(done)
    try:
        path.write_text("log level WARN\n", encoding="utf-8")
        wait_until(lambda: applied, 10, 0.05, "the reload of the changed file")
        assert [c.log_level for c in applied[0]] == ["WARN"]
    finally:
        done.set()


class ReconfiguredStream:
    """What the stream process's Follower calls on its stream."""

    def __init__(self) -> None:
        self.configs: list[MirrorConfig] = []

    def reconfigure(self, config: MirrorConfig) -> None:
        self.configs.append(config)


def test_a_reload_reaches_each_stream_with_its_throttle_and_log_level() -> None:
    running = config(num_streams=2)
    sent: dict[int, list[Orders]] = {0: [], 1: []}
    control = FlowControl(running, lambda sid, orders: sent[sid].append(orders))
    new = dataclasses.replace(
        running,
        topics=TopicSelection(include=("b",)),
        throttle=parse_throttle("backlog.records=100", "--throttle"),
        log_level="ERROR",
    )
    control.reconfigure(new)
    orders = {sid: got[-1] for sid, got in sent.items()}
    assert all(o.config == new and o.throttle != ThrottleSettings() for o in orders.values())

    gate, stream, queue_ = Gate(), ReconfiguredStream(), Queue[Orders]()
    follower = Follower(gate, StreamLink(0, queue_, Orders(0)))
    root = logging.getLogger()
    level = root.level
    try:
        queue_.put(orders[0])
        follower.follow(stream)
        assert stream.configs == [new]
        assert root.level == logging.ERROR
        assert gate.throttle.settings == orders[0].throttle
        queue_.put(orders[0])  # the same configuration again: nothing to reconfigure
        follower._next = 0.0
        follower.follow(stream)
        assert stream.configs == [new]
    finally:
        root.setLevel(level)

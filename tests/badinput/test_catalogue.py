"""Runs every row of the bad-input catalogue (catalogue.py) against the real command: the exit
code, a message naming the problem, a bounded time, and afterwards: no offset committed by the
row's consumer group, no topic created on the target, the row's password nowhere in the output.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.badinput.catalogue import CASES, DOC, PASSWORD, Case, markdown
from tests.cleanenv import kmirror_env, run_kmirror
from tests.conftest import MakeTopic
from tests.kafkatools import (
    Clusters,
    committed_offsets,
    create_topic,
    delete_topic,
    list_topics,
    produce,
    unique,
    wait_until,
)
from tests.mirrorproc import write_properties

pytestmark = pytest.mark.badinput


class Ctx:
    """What a row's builder may use: files in its own directory, the clusters, its topic and
    its consumer group."""

    def __init__(
        self, tmp: Path, clusters: Clusters, topic: str, group: str, secure: Any = None
    ) -> None:
        self.tmp, self.clusters, self.topic, self.group, self.secure = (
            tmp,
            clusters,
            topic,
            group,
            secure,
        )
        unreadable = tmp / "secret-is-a-directory"
        unreadable.mkdir(exist_ok=True)
        templates = tmp / "templates"
        templates.mkdir(exist_ok=True)
        (templates / "consumer.properties").write_text(
            "bootstrap.servers=${SOURCE_CLUSTER_BOOTSTRAP_SERVERS}\n"
            "group.id=${SOURCE_CLUSTER_CONSUMER_GROUP}\nclient.id=${NOT_SET_ANYWHERE}\n"
        )
        # A port something already listens on (all addresses, like the metrics endpoint).
        self.busy = socket.socket()
        self.busy.bind(("0.0.0.0", 0))
        self.busy.listen()
        self.values = {
            "busy_port": str(self.busy.getsockname()[1]),
            "topic": topic,
            "group": group,
            "source": clusters.source_bootstrap,
            "target": clusters.target_bootstrap,
            "tmp": str(tmp),
            "password": PASSWORD,
            "unreadable": str(unreadable),
            "templates_with_unknown_var": str(templates),
        }

    def fmt(self, text: str) -> str:
        return text.format(**self.values)

    def write(self, name: str, text: str) -> Path:
        path = self.tmp / name
        path.write_text(text, encoding="utf-8")
        return path

    def consumer_defaults(self) -> dict[str, str]:
        return {"bootstrap.servers": self.clusters.source_bootstrap, "group.id": self.group}

    def producer_defaults(self) -> dict[str, str]:
        return {"bootstrap.servers": self.clusters.target_bootstrap}

    def properties(
        self, kind: str, spec: Mapping[str, str | None] | str | None, defaults: dict[str, str]
    ) -> Path:
        path = self.tmp / f"{kind}.properties"
        if spec == "__missing__":
            return self.tmp / f"no-such-{kind}.properties"
        if spec == "__dir__":
            path.mkdir(exist_ok=True)
            return path
        if isinstance(spec, str) and spec.startswith("__secure__:"):
            return write_properties(path, {**self._secure(spec.split(":", 1)[1]), **_group(self)})
        if isinstance(spec, str):
            return self.write(path.name, self.fmt(spec))
        conf: dict[str, str] = dict(defaults)
        for key, value in (spec or {}).items():
            if value is None:
                conf.pop(key, None)
            else:
                conf[key] = self.fmt(value)
        return write_properties(path, conf)

    def _secure(self, variant: str) -> dict[str, str]:
        s = self.secure
        if variant == "wrong-password":
            return s.java_sasl(password=PASSWORD)  # type: ignore[no-any-return]
        if variant == "other-ca":
            return s.java_sasl(ca=s.pki.other_ca)  # type: ignore[no-any-return]
        if variant == "plain":
            conf = s.java_sasl()
            conf["sasl.mechanism"] = "PLAIN"
            conf["sasl.jaas.config"] = (
                "org.apache.kafka.common.security.plain.PlainLoginModule required "
                f'username="alice" password="{PASSWORD}";'
            )
            return conf  # type: ignore[no-any-return]
        raise ValueError(variant)


def _group(ctx: Ctx) -> dict[str, str]:
    return {"group.id": ctx.group}


# --------------------------------------------------------------------------- cluster state


def group_offsets(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    # The first group request of a fresh cluster creates __consumer_offsets: allow for that.
    return wait_until(
        lambda: (committed_offsets(bootstrap, group),),
        60,
        1.0,
        f"offsets of group {group} at {bootstrap}",
    )[0]


def snapshot(ctx: Ctx) -> dict[str, Any]:
    state: dict[str, Any] = {
        "target_topics": list_topics(ctx.clusters.target_bootstrap),
        "offsets": group_offsets(ctx.clusters.source_bootstrap, ctx.group),
    }
    if ctx.secure is not None:
        state["secure_offsets"] = group_offsets(ctx.secure.plaintext, ctx.group)
        state["secure_topics"] = list_topics(ctx.secure.plaintext)
    return state


@pytest.fixture(scope="module")
def shared_topic(clusters: Clusters) -> Iterator[str]:
    """One source topic (2 partitions, 10 records) the rows without their own setup select."""
    name = unique("badinput")
    create_topic(clusters.source_bootstrap, name, 2)
    records = [{"key": b"k%d" % i, "value": b"v"} for i in range(10)]
    produce(clusters.source_bootstrap, name, records)
    yield name
    delete_topic(clusters.source_bootstrap, name, wait=False)


def prepare(case: Case, clusters: Clusters, make_topic: MakeTopic, shared: str, group: str) -> str:
    """Cluster state a row needs; returns the source topic the row selects."""
    if not case.setup:
        return shared
    src, dst = clusters.source_bootstrap, clusters.target_bootstrap
    topic = unique(f"badinput-{case.id}")
    if case.setup == "target-fewer-partitions":
        make_topic(src, topic, partitions=2)
        produce(src, topic, [{"value": b"x", "partition": i % 2} for i in range(4)])
        make_topic(dst, topic, partitions=1)
    elif case.setup == "target-exists":
        make_topic(src, topic, partitions=1)
        produce(src, topic, [{"value": b"x"}] * 3)
        make_topic(dst, topic, partitions=1)
    elif case.setup == "source-trimmed":
        # The group got to offset 5, then retention deleted offsets 0..9.
        make_topic(src, topic, partitions=1)
        produce(src, topic, [{"value": b"r%d" % i} for i in range(20)])
        make_topic(dst, topic, partitions=1)
        c = Consumer({"bootstrap.servers": src, "group.id": group, "enable.auto.commit": False})
        c.commit(offsets=[TopicPartition(topic, 0, 5)], asynchronous=False)
        c.close()
        admin = AdminClient({"bootstrap.servers": src})
        for fut in admin.delete_records([TopicPartition(topic, 0, 10)]).values():
            fut.result()
    else:
        raise ValueError(case.setup)
    return topic


# --------------------------------------------------------------------------- the rows


def _helm(values: Any, tmp: Path) -> subprocess.CompletedProcess[str]:
    from tests.chart import chartlib

    helm = chartlib.require_tool(chartlib.HELM)
    files: list[str] = []
    for i, v in enumerate(values if isinstance(values, list) else [values]):
        path = tmp / f"values-{i}.json"
        path.write_text(json.dumps(v))
        files += ["-f", str(path)]
    return subprocess.run(
        [str(helm), "template", "r", str(chartlib.CHART_DIR), *files],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=chartlib.HELM_ENV,
    )


@dataclass
class Outcome:
    """One row run: the command's result and the cluster state around it (None: a chart row,
    which reaches no cluster)."""

    result: subprocess.CompletedProcess[str]
    elapsed: float
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    topic: str = ""


def run_row(case: Case, tmp: Path, ctx_of: Callable[[Case, Path], Ctx] | None) -> Outcome:
    if ctx_of is None:
        inv = case.build(None)
        result = _helm(inv.helm_values, tmp)
        return Outcome(result, 0.0)
    ctx = ctx_of(case, tmp)
    inv = case.build(ctx)
    before = snapshot(ctx)
    with ctx.busy:
        result = run_kmirror(inv.args, kmirror_env(inv.env), timeout=case.max_seconds + 60)
    return Outcome(result, result.elapsed, before, snapshot(ctx), ctx.topic)  # type: ignore[attr-defined]


# Rows run ROW_WORKERS at a time: most of a row is a process starting, or waiting on a
# cluster that is not there (the unreachable rows' 20 s), so the catalogue takes about a
# third of its one-at-a-time time on 2 cores; every row has its own group and topic names,
# and its time bound (max_seconds) is far above what it takes even so.
ROW_WORKERS = 4


@pytest.fixture(scope="module")
def outcomes(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Outcome | BaseException]]:
    """Every row this session selected, run; by row id, its Outcome or what it raised."""
    by_id = {c.id: c for c in CASES}
    selected = [
        by_id[item.callspec.id]
        for item in request.session.items
        if isinstance(item, pytest.Function) and item.originalname == "test_bad_input"
    ]
    created: list[tuple[str, str]] = []
    lock = threading.Lock()
    ctx_of = None
    if any(c.needs != "chart" for c in selected):
        clusters: Clusters = request.getfixturevalue("clusters")
        shared: str = request.getfixturevalue("shared_topic")
        secure = (
            request.getfixturevalue("secure_cluster")
            if any(c.needs == "secure" for c in selected)
            else None
        )

        def make_topic(bootstrap: str, name: str, partitions: int = 1) -> str:
            create_topic(bootstrap, name, partitions)
            with lock:
                created.append((bootstrap, name))
            return name

        def ctx_of_row(case: Case, tmp: Path) -> Ctx:
            group = unique(f"g-badinput-{case.id}")
            topic = prepare(case, clusters, make_topic, shared, group)
            return Ctx(tmp, clusters, topic, group, secure if case.needs == "secure" else None)

        ctx_of = ctx_of_row

    def one(case: Case) -> Outcome:
        tmp = tmp_path_factory.mktemp(f"row-{case.id}")
        return run_row(case, tmp, None if case.needs == "chart" else ctx_of)

    out: dict[str, Outcome | BaseException] = {}
    with ThreadPoolExecutor(ROW_WORKERS) as pool:
        futures = {case.id: pool.submit(one, case) for case in selected}
        for row, future in futures.items():
            try:
                out[row] = future.result()
            except BaseException as exc:
                out[row] = exc
    yield out
    for bootstrap, topic in created:
        with contextlib.suppress(Exception):
            delete_topic(bootstrap, topic, timeout=10, wait=False)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case: Case, outcomes: dict[str, Outcome | BaseException]) -> None:
    outcome = outcomes[case.id]
    if isinstance(outcome, BaseException):
        raise outcome
    result = outcome.result
    out = result.stderr + result.stdout
    assert result.returncode == case.code, f"exit {result.returncode}:\n{out[-3000:]}"
    assert case.fragment in out, out[-3000:]
    assert PASSWORD not in out, "a password was echoed"
    if outcome.before is None or outcome.after is None:
        return  # a chart row
    assert outcome.elapsed <= case.max_seconds, (
        f"took {outcome.elapsed:.0f}s (bound {case.max_seconds:.0f}s)"
    )
    before, after = outcome.before, outcome.after
    assert after["offsets"] == before["offsets"], "the consumer group committed offsets"
    # Only topics named after the row's selection count: other work shares the clusters.
    new = {t for t in after["target_topics"] - before["target_topics"] if outcome.topic in t}
    assert not new, f"topics appeared on the target: {new}"
    if "secure_offsets" in before:
        assert after["secure_offsets"] == before["secure_offsets"]
        assert not {
            t for t in after["secure_topics"] - before["secure_topics"] if outcome.topic in t
        }


def test_at_least_40_cases_in_every_dialect() -> None:
    assert len(CASES) >= 40
    assert len({c.id for c in CASES}) == len(CASES)
    dialects = {c.dialect for c in CASES}
    assert {"flags", "properties", "mm2.properties", "KUDO", "environment"} <= dialects


def test_docs_table_is_in_sync() -> None:
    assert DOC.exists(), "run: python -m tests.badinput.catalogue --write"
    assert DOC.read_text(encoding="utf-8") == markdown(), (
        "docs/bad-input.md is stale: python -m tests.badinput.catalogue --write"
    )

"""Several flows in one mirror (MM2's multi-cluster mode): an mm2.properties enabling A->C and
B->C mirrors both into C from one `kmirror run` process, byte for byte, with checkpoints,
heartbeats and metrics per flow; `check` and `status` show each flow, the control API reaches
one with `--flow`. Two-way A->B and B->A in one process copy both ways without a loop.

A is the source cluster and C the target of the session (`clusters`); B is a third cluster this
module starts (11-35 s; with the copies about a minute: hence `slow`, in `make test-faults`;
the two-way test, 35 s, needs only `clusters` and is `slow` for its length), or the one
KMIRROR_THIRD_BOOTSTRAP names (e.g. `scripts/kafka-local up NAME=PORT` started by hand). Its
own port: KMIRROR_THIRD_PORT (default 23192; controller +1).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kmirror.dr.formats import Checkpoint, Heartbeat
from scripts import kafkalocal
from tests.integration.dr.drtools import commit_group
from tests.kafkatools import Clusters, Rec, consume_all, list_topics, produce, unique, wait_until
from tests.mirrorproc import MirrorProcess, run_cli
from tests.promtext import sample

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PARTITIONS = 3
RECORDS = 60


@pytest.fixture(scope="module")
def third() -> Iterator[str]:
    """A third cluster's bootstrap servers (B)."""
    given = os.environ.get("KMIRROR_THIRD_BOOTSTRAP")
    if given:
        yield given
        return
    spec = kafkalocal.ClusterSpec(
        unique("flows3"), int(os.environ.get("KMIRROR_THIRD_PORT", "23192"))
    )
    started = time.monotonic()
    try:
        kafkalocal.up([spec], fresh=True, timeout=180)
        print(f"[flows] third cluster up in {time.monotonic() - started:.1f}s")
        yield spec.bootstrap
    finally:
        kafkalocal.down([spec.name], keep=False)
        shutil.rmtree(kafkalocal.cluster_dir(spec.name), ignore_errors=True)


def records(alias: str, start_ms: int) -> list[dict[str, object]]:
    """Keys, values, headers (repeated, null) and timestamps, over every partition; one record
    without a key and one without a value."""
    out: list[dict[str, object]] = [
        {
            "partition": i % PARTITIONS,
            "key": b"%s-k%d" % (alias.encode(), i),
            "value": bytes([i % 256]) * (i + 1),
            "headers": [("h", b"%d" % i), ("h", None), ("from", alias.encode())],
            "timestamp": start_ms - 10_000 + i,
        }
        for i in range(RECORDS - 2)
    ]
    out += [{"partition": 0, "key": None, "value": b"no key"}, {"partition": 1, "key": b"null"}]
    return out


def exact(records: list[Rec]) -> list[tuple[object, ...]]:
    return [(r.offset, *r.content()) for r in records]


def test_two_flows_into_one_cluster_from_one_process(
    tmp_path: Path, clusters: Clusters, third: str, make_topic
) -> None:
    a, b, c = clusters.source_bootstrap, third, clusters.target_bootstrap
    topic = unique("flows")  # the same name on A and on B: A.<topic> and B.<topic> on C
    for bootstrap in (a, b):
        make_topic(bootstrap, name=topic, partitions=PARTITIONS)
    started_ms = int(time.time() * 1000)
    for alias, bootstrap in (("A", a), ("B", b)):
        produce(bootstrap, topic, records(alias, started_ms))
    app = unique("app")
    props = {
        "clusters": "A, B, C",
        "A.bootstrap.servers": a,
        "B.bootstrap.servers": b,
        "C.bootstrap.servers": c,
        "A->C.enabled": "true",
        "B->C.enabled": "true",
        "topics": topic,
        "A->C.consumer.group.id": unique("mirror-a"),
        "B->C.consumer.group.id": unique("mirror-b"),
        "groups": f"{app}-.*",
        "offset.flush.interval.ms": "500",
        "emit.checkpoints.interval.seconds": "1",
        "replication.factor": "1",
    }
    path = tmp_path / "mm2.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()), encoding="utf-8")
    token = tmp_path / "token"
    token.write_text("flows-token\n", encoding="utf-8")
    args = ["--mm2-config", str(path), "--control-token-file", str(token)]

    with MirrorProcess(["run", *args], tmp_path / "mirror.log") as mirror:
        for alias, bootstrap in (("A", a), ("B", b)):
            wanted = len(consume_all(bootstrap, topic))
            wait_until(
                lambda alias=alias, wanted=wanted: (
                    f"{alias}.{topic}" in list_topics(c)
                    and len(consume_all(c, f"{alias}.{topic}")) == wanted
                ),
                90,
                0.5,
                f"{alias}->C copied",
            )
            # Byte for byte, at the same partitions and offsets (fresh target topics).
            assert exact(consume_all(c, f"{alias}.{topic}")) == exact(consume_all(bootstrap, topic))
        # An application group on each source, part-way: each flow checkpoints its own.
        committed = {"A": {0: 5, 1: 12, 2: 1}, "B": {0: 19, 1: 2}}
        for alias, bootstrap in (("A", a), ("B", b)):
            commit_group(
                bootstrap, f"{app}-{alias}", {(topic, p): o for p, o in committed[alias].items()}
            )

        def checkpoints(alias: str) -> dict[tuple[str, int], int]:
            rows = [
                Checkpoint.decode(r.key or b"", r.value or b"")
                for r in consume_all(c, f"{alias}.checkpoints.internal")
            ]
            return {
                (cp.topic, cp.partition): cp.downstream_offset
                for cp in rows
                if cp.group == f"{app}-{alias}"
            }

        for alias in ("A", "B"):
            expected = {(f"{alias}.{topic}", p): o for p, o in committed[alias].items()}
            wait_until(
                lambda alias=alias, expected=expected: (
                    f"{alias}.checkpoints.internal" in list_topics(c, internal=True)
                    and checkpoints(alias) == expected
                ),
                60,
                0.5,
                f"the checkpoints of flow {alias}->C",
            )
        beats = {
            (hb.source_alias, hb.target_alias)
            for r in consume_all(c, "heartbeats")
            if (hb := Heartbeat.decode(r.key or b"", r.value or b"")).timestamp_ms >= started_ms
        }
        assert {("A", "C"), ("B", "C")} <= beats
        metrics = mirror.get("/metrics")[1]
        for alias, flow in (("A", "A->C"), ("B", "B->C")):
            copied = sample(
                metrics, "kmirror_mirror_records_total", flow=flow, topic=f"{alias}.{topic}"
            )
            assert copied == RECORDS, (flow, copied)
            emitted = sample(metrics, "kmirror_dr_checkpoints_emitted_total", flow=flow)
            assert emitted is not None and emitted > 0, (flow, emitted)

        # `status` asks the running mirror (the control API is on): both flows, live, with
        # their control state, nothing left to copy.
        port = ["--metrics-port", str(mirror.metrics_port)]

        def status() -> list[dict[str, Any]]:
            res = run_cli(["status", *args, *port, "--json"])
            assert res.returncode == 0, res.stderr
            flows: list[dict[str, Any]] = json.loads(res.stdout)["flows"]
            return flows

        wait_until(
            lambda: (
                [(d["flow"], d["lag"], "control" in d) for d in status()]
                == [("A->C", 0, True), ("B->C", 0, True)]
            ),
            60,
            1.0,
            "live status of both flows at lag 0",
        )
        paused = run_cli(["pause", *args, *port, "--flow", "B->C", topic])
        assert paused.stdout.strip() == f"B->C: {topic} paused", paused.stdout + paused.stderr
        assert {d["flow"]: d["control"]["paused"] for d in status()} == {
            "A->C": [],
            "B->C": [topic],
        }
        assert mirror.stop() == 0, mirror.log

    check = run_cli(["check", *args, "--json"])
    assert check.returncode == 0, check.stderr
    flows = json.loads(check.stdout)["flows"]
    # (MM2's heartbeats topics cross too: left out here.)
    assert [
        (f["flow"], [r["target"] for r in f["topics"] if r["source"] == topic]) for f in flows
    ] == [("A->C", [f"A.{topic}"]), ("B->C", [f"B.{topic}"])]
    one = run_cli(["offsets", *args, "--group", f"{app}-A"])
    assert one.returncode == 2 and "choose it with --flow" in one.stderr, one.stderr


def test_two_way_flows_in_one_process(tmp_path: Path, clusters: Clusters, make_topic) -> None:
    """A->B and B->A in one process: each side's topic copied byte for byte to the other, and
    neither copy travels back (MM2's loop rule), although the topic pattern matches them."""
    a, b = clusters.source_bootstrap, clusters.target_bootstrap
    base = unique("twoway")
    topics = {"A": make_topic(a, name=f"{base}-a", partitions=PARTITIONS),
              "B": make_topic(b, name=f"{base}-b", partitions=PARTITIONS)}  # fmt: skip
    now_ms = int(time.time() * 1000)
    for alias, bootstrap in (("A", a), ("B", b)):
        produce(bootstrap, topics[alias], records(alias, now_ms))
    props = {
        "clusters": "A, B",
        "A.bootstrap.servers": a,
        "B.bootstrap.servers": b,
        "A->B.enabled": "true",
        "B->A.enabled": "true",
        "topics": f".*{base}.*",
        "A->B.consumer.group.id": unique("mirror-ab"),
        "B->A.consumer.group.id": unique("mirror-ba"),
        "refresh.topics.interval.seconds": "1",
        "replication.factor": "1",
    }
    path = tmp_path / "mm2.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()), encoding="utf-8")
    copies = {"A": (b, f"A.{base}-a"), "B": (a, f"B.{base}-b")}
    with MirrorProcess(["run", "--mm2-config", str(path)], tmp_path / "mirror.log") as mirror:
        for alias, source in (("A", a), ("B", b)):
            there, name = copies[alias]
            wait_until(
                lambda there=there, name=name: (
                    name in list_topics(there) and len(consume_all(there, name)) == RECORDS
                ),
                90,
                0.5,
                f"{name} copied",
            )
            assert exact(consume_all(there, name)) == exact(consume_all(source, topics[alias]))
        time.sleep(3)  # three topic refreshes of each flow: a loop would have begun
        assert not {f"B.A.{base}-a", f"A.B.{base}-b"} & (list_topics(a) | list_topics(b))
        assert mirror.stop() == 0, mirror.log

"""scripts.kafkalocal without a broker: what a cluster's files say and what the CLI accepts."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts import kafkalocal
from scripts.kafkalocal import cli
from scripts.kafkalocal.lifecycle import new_cluster_id
from scripts.kafkalocal.quorum import expand

pytestmark = pytest.mark.unit


def test_server_properties_single_node_with_overrides_last() -> None:
    spec = kafkalocal.ClusterSpec("x", 19792, {"num.partitions": "3", "extra.key": "v"})
    props = kafkalocal.server_properties(spec, Path("/d"))
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:19792,CONTROLLER://127.0.0.1:19793"
    assert props["controller.quorum.voters"] == "1@127.0.0.1:19793"
    assert props["offsets.topic.replication.factor"] == "1"
    assert props["num.partitions"] == "3"
    assert list(props)[-1] == "extra.key"


@pytest.mark.parametrize(
    ("name", "port", "message"),
    [("-bad", 19092, "invalid cluster name"), ("ok", 80, "port 80 out of range")],
)
def test_cluster_spec_refuses_bad_names_and_ports(name: str, port: int, message: str) -> None:
    with pytest.raises(kafkalocal.ClusterError, match=message):
        kafkalocal.ClusterSpec(name, port)


def test_cluster_ids_are_22_chars_and_never_look_like_options() -> None:
    ids = {new_cluster_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(len(i) == 22 and not i.startswith("-") for i in ids)


def test_cli_rejects_malformed_cluster_and_set_flags(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["up", "--cluster", "a:1"]) == 1
    assert "--cluster wants NAME=PORT, got 'a:1'" in capsys.readouterr().err
    assert cli.main(["up", "--cluster", "a=19892", "--set", "b:x=1"]) == 1
    assert "no cluster named 'b'" in capsys.readouterr().err


def test_env_lines_for_named_clusters(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KMIRROR_CACHE", str(tmp_path))
    assert kafkalocal.env_lines(["source", "target", "source"]) == [
        "KMIRROR_SOURCE_BOOTSTRAP=127.0.0.1:19092",
        "KMIRROR_TARGET_BOOTSTRAP=127.0.0.1:29092",
    ]


def test_three_brokers_have_production_replication_settings() -> None:
    specs = kafkalocal.quorum_specs("q", 24092, 3)
    assert [(s.name, s.port, s.controller_port) for s in specs] == [
        ("q-1", 24092, 24093),
        ("q-2", 24094, 24095),
        ("q-3", 24096, 24097),
    ]
    props = kafkalocal.server_properties(specs[1], Path("/d"))
    assert props["node.id"] == "2"
    assert props["controller.quorum.voters"] == (
        "1@127.0.0.1:24093,2@127.0.0.1:24095,3@127.0.0.1:24097"
    )
    assert props["default.replication.factor"] == "3"
    assert props["min.insync.replicas"] == "2"
    assert props["offsets.topic.replication.factor"] == "3"
    assert props["transaction.state.log.replication.factor"] == "3"
    assert props["transaction.state.log.min.isr"] == "2"
    assert {s.cluster_id for s in specs} == {specs[0].cluster_id}  # one cluster
    assert specs[0].heap_mb < kafkalocal.ClusterSpec("x", 19092).heap_mb


def test_proxied_brokers_advertise_their_proxy_and_replicate_around_it() -> None:
    q = kafkalocal.Quorum("p", 21092, 3, proxied=True, overrides={"num.partitions": "4"})
    assert q.bootstrap == "127.0.0.1:21092,127.0.0.1:21093,127.0.0.1:21094"
    assert q.direct_bootstrap == "127.0.0.1:21102,127.0.0.1:21112,127.0.0.1:21122"
    assert q.api_port == 21101
    assert q.routes() == [("p-1", 21092, 21104), ("p-2", 21093, 21114), ("p-3", 21094, 21124)]
    spec = q.specs()[2]
    assert spec.ports == [21122, 21123, 21124]
    props = kafkalocal.server_properties(spec, Path("/d"))
    assert props["listeners"] == (
        "PLAINTEXT://127.0.0.1:21122,CONTROLLER://127.0.0.1:21123,CLIENT://127.0.0.1:21124"
    )
    # Clients that came through a proxy are told the proxies' addresses; brokers talk directly.
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:21122,CLIENT://127.0.0.1:21094"
    assert props["inter.broker.listener.name"] == "PLAINTEXT"
    assert props["num.partitions"] == "4"


def test_quorum_layout_survives_its_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KMIRROR_CACHE", str(tmp_path))
    q = kafkalocal.Quorum("p", 21092, 3, proxied=True)
    (tmp_path / "clusters" / "p").mkdir(parents=True)
    (tmp_path / "clusters" / "p" / "quorum.json").write_text(q.to_json())
    assert kafkalocal.load_quorum("p") == q
    assert kafkalocal.load_quorum("p").cluster_id == q.cluster_id  # type: ignore[union-attr]
    assert kafkalocal.known_quorums() == ["p"]
    assert expand(["p", "other"]) == ["p-1", "p-2", "p-3", "other"]


def test_cli_wants_names_for_multi_broker_clusters(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["up", "--brokers", "3"]) == 1
    assert "need named clusters" in capsys.readouterr().err
    with pytest.raises(kafkalocal.ClusterError, match=r"brokers must be 1\.\.9"):
        kafkalocal.Quorum("q", 21092, 12)

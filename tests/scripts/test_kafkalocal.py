"""scripts.kafkalocal without a broker: what a cluster's files say and what the CLI accepts."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts import kafkalocal
from scripts.kafkalocal import cli
from scripts.kafkalocal.lifecycle import new_cluster_id

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

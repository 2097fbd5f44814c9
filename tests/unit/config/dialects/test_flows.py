"""Several flows in one process: an mm2.properties enabling A->C and B->C (or A->B and B->A)
loads every flow with the common options applied to each; --flow and --clusters choose; what
the process has once must agree and two flows must not share their topics on the target."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping

import pytest
from prometheus_client import CollectorRegistry

from kmirror.app.reload import ConfigSource, Reloader
from kmirror.cli.flags import options_from
from kmirror.config.dialects.flows import check_flows
from kmirror.config.dialects.loader import load_flows
from kmirror.config.model import MirrorConfig
from kmirror.errors import ConfigError
from tests.unit.config.conftest import load, parse

pytestmark = pytest.mark.unit

Write = Callable[[str, str], str]
THREE = (
    "clusters=a, b, c\na.bootstrap.servers=a:1\nb.bootstrap.servers=b:1\nc.bootstrap.servers=c:1\n"
    "a->c.enabled=true\nb->c.enabled=true\n"
)
TWO_WAY = "clusters=a, b\na.bootstrap.servers=a:1\nb.bootstrap.servers=b:1\n" + (
    "a->b.enabled=true\nb->a.enabled=true\n"
)


def flows(argv: list[str], env: Mapping[str, str] | None = None) -> list[MirrorConfig]:
    return load_flows(options_from(parse(argv)), dict(env or {}))


def test_every_enabled_flow_with_the_common_options(write: Write) -> None:
    path = write("mm2.properties", THREE)
    a, b = flows(
        ["--mm2.config", path, "--metrics-port", "9500", "--log-level", "DEBUG"],
        {"KMIRROR_THROTTLE": "tail.records=10"},
    )
    assert (a.flow, b.flow) == ("a->c", "b->c")
    assert (a.source.bootstrap_servers, b.source.bootstrap_servers) == ("a:1", "b:1")
    assert a.target.bootstrap_servers == b.target.bootstrap_servers == "c:1"
    assert a.metrics_port == b.metrics_port == 9500
    assert a.log_level == b.log_level == "DEBUG"
    assert a.throttle == b.throttle and a.throttle.flow.tail.records_per_s == 10


def test_two_way(write: Write) -> None:
    path = write("mm2.properties", TWO_WAY)
    ab, ba = flows(["--mm2.config", path])
    assert (ab.flow, ba.flow) == ("a->b", "b->a")
    # Each flow leaves the other's copies alone (no loop): MM2's rules.
    assert ab.topics.select({"t", "b.t"}) == ["t"]
    assert ba.topics.select({"t", "a.t"}) == ["t"]


def test_flow_and_clusters_choose(write: Write) -> None:
    path = write("mm2.properties", THREE + "a->b.enabled=true\n")
    assert [c.flow for c in flows(["--mm2.config", path, "--flow", "b->c"])] == ["b->c"]
    assert [c.flow for c in flows(["--mm2.config", path, "--clusters", "c"])] == ["a->c", "b->c"]
    assert [c.flow for c in flows(["--mm2.config", path, "--clusters", "b"])] == ["a->b"]
    with pytest.raises(ConfigError, match=r"--flow c->a: not an enabled flow .*a->b, a->c, b->c"):
        flows(["--mm2.config", path, "--flow", "c->a"])


def test_commands_of_one_flow_ask_for_flow(write: Write) -> None:
    """offsets, failover, failback and kmirror-validate work on one flow (load_config)."""
    path = write("mm2.properties", THREE)
    with pytest.raises(ConfigError, match=r"several flows \(a->c, b->c\).*choose it with --flow"):
        load(["--mm2.config", path])
    assert load(["--mm2.config", path, "--flow", "b->c"]).flow == "b->c"


def test_one_group_for_two_flows_into_one_cluster_is_refused(write: Write) -> None:
    """Both flows would keep their progress in the same topic on c: refused before start."""
    path = write("mm2.properties", THREE)
    with pytest.raises(ConfigError, match=r"a->c and b->c would share the progress topic"):
        flows(["--mm2.config", path, "--group-id", "one"])
    same = write("same.properties", THREE + "consumer.group.id=one\n")
    with pytest.raises(ConfigError, match=r"own consumer group"):
        flows(["--mm2.config", same])
    # The same cluster under two aliases (its servers in another case) is still one cluster.
    alias = write(
        "alias.properties",
        THREE.replace("clusters=a, b, c", "clusters=a, b, c, d").replace("b->c", "b->d")
        + "d.bootstrap.servers=C:1\nconsumer.group.id=one\n",
    )
    with pytest.raises(ConfigError, match=r"a->c and b->d would share the progress topic"):
        flows(["--mm2.config", alias])
    # Two flows into different clusters may share a group name (different clusters' topics).
    assert len(flows(["--mm2.config", write("tw.properties", TWO_WAY), "--group-id", "g"])) == 2


def test_process_settings_must_agree(write: Write) -> None:
    a, b = flows(["--mm2.config", write("mm2.properties", THREE)])
    check_flows([a, b])
    for name, value in (("metrics_port", 9999), ("log_level", "DEBUG"), ("log_json", True)):
        with pytest.raises(ConfigError, match=rf"{name} differs between the flows a->c and b->c"):
            check_flows([a, dataclasses.replace(b, **{name: value})])
    with pytest.raises(ConfigError, match=r"the flow a->c is configured twice"):
        check_flows([a, a])


def test_a_bad_flow_refuses_them_all(write: Write) -> None:
    path = write("mm2.properties", THREE + "b->c.tasks.max=0\n")
    with pytest.raises(ConfigError, match=r"tasks.max"):
        flows(["--mm2.config", path])


def test_reload_of_several_flows(write: Write, caplog: pytest.LogCaptureFixture) -> None:
    """`kmirror run`'s reload loads every flow again: a live change in one flow is applied to
    that flow; a flow added to the file is refused (it needs processes), naming it."""
    path = write("mm2.properties", THREE + "topics=t\n")
    options = options_from(parse(["--mm2.config", path]))
    applied: list[list[MirrorConfig]] = []
    reloader = Reloader(
        ConfigSource(lambda: load_flows(options, {})),
        load_flows(options, {}),
        applied.append,
        CollectorRegistry(),
    )
    write("mm2.properties", THREE + "topics=t\nb->c.topics=t, u\n")
    assert reloader.reload("SIGHUP") == "applied"
    assert [(c.flow, c.topics.include) for c in applied[0]] == [
        ("a->c", ("t",)),
        ("b->c", ("t", "u")),
    ]
    write("mm2.properties", THREE + "topics=t\nb->c.topics=t, u\na->b.enabled=true\n")
    with caplog.at_level(logging.ERROR, "kmirror.app.reload"):
        assert reloader.reload("SIGHUP") == "refused"
    assert "a->b: flow a->b (new in the configuration)" in caplog.text
    assert len(applied) == 1

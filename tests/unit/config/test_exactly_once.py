"""The exactly-once switch in every dialect, and the transaction settings it implies."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from kmirror.entrypoint.render import build_plan, plan_config
from kmirror.errors import ConfigError
from kmirror.kafka import clients
from tests.unit.config.conftest import load

pytestmark = pytest.mark.unit

Write = Callable[[str, str], str]
KUDO = ["--this-bootstrap-servers", "a:1", "--external-bootstrap-servers", "b:1",
        "--external-cluster-type", "SOURCE"]  # fmt: skip
MM2 = "clusters=a, b\na.bootstrap.servers=a:1\nb.bootstrap.servers=b:1\na->b.enabled=true\n"


@pytest.fixture
def mm1(write: Write) -> list[str]:
    consumer = write("c.properties", "bootstrap.servers=s:1\ngroup.id=g\n")
    producer = write("p.properties", "bootstrap.servers=t:1\n")
    return ["--consumer.config", consumer, "--producer.config", producer, "--whitelist", ".*"]


def test_off_by_default(mm1: list[str]) -> None:
    assert not load(mm1).exactly_once
    assert not load(KUDO).exactly_once


def test_flag_and_variable(mm1: list[str]) -> None:
    assert load([*mm1, "--exactly-once"]).exactly_once
    assert load([*KUDO, "--exactly-once"]).exactly_once
    assert load(KUDO, {"EXACTLY_ONCE": "true"}).exactly_once
    assert not load(KUDO, {"EXACTLY_ONCE": "false"}).exactly_once
    with pytest.raises(ConfigError, match="EXACTLY_ONCE"):
        load(KUDO, {"EXACTLY_ONCE": "sometimes"})


@pytest.mark.parametrize(
    ("line", "on"),
    [
        ("exactly.once.source.support=enabled", True),
        ("exactly.once.support=enabled", True),
        ("a->b.exactly.once.support=required", True),
        ("exactly.once.source.support=preparing", False),
        ("exactly.once.support=disabled", False),
    ],
)
def test_mm2_settings(write: Write, line: str, on: bool) -> None:
    c = load(["--mm2.config", write("mm2.properties", f"{MM2}{line}\n")])
    assert c.exactly_once is on
    assert not any("exactly.once" in n for n in c.notes)  # understood, not "not implemented"


def test_mm2_typo_names_the_setting(write: Write) -> None:
    path = write("mm2.properties", f"{MM2}exactly.once.source.support=enable\n")
    with pytest.raises(ConfigError, match=re.escape("exactly.once.source.support='enable'")):
        load(["--mm2.config", path])


def test_entrypoint_turns_it_on() -> None:
    base = {"SOURCE_CLUSTER_BOOTSTRAP_SERVERS": "s:1", "SINK_CLUSTER_BOOTSTRAP_SERVERS": "t:1"}
    on = build_plan({**base, "EXACTLY_ONCE": "true"})
    assert "--exactly-once" in on.argv()
    assert plan_config(on).exactly_once is True
    assert plan_config(build_plan(base)).exactly_once is False


def test_one_transactional_id_per_source_partition(mm1: list[str]) -> None:
    c = load([*mm1, "--exactly-once", "--offset.commit.interval.ms", "5000"])
    conf = c.transactional_producer_conf("orders", 3)
    assert conf["transactional.id"] == "kmirror-g-orders-3"
    # Open for one commit interval, plus a minute for the commit itself; idempotence kept.
    assert (conf["transaction.timeout.ms"], conf["enable.idempotence"]) == ("65000", "true")
    assert c.consumer_conf()["isolation.level"] == "read_committed"
    assert clients.reader_conf(c, "target", "g")["isolation.level"] == "read_committed"


def test_commit_interval_must_fit_in_a_transaction(mm1: list[str], write: Write) -> None:
    # The default timeout follows the interval up to the broker's default maximum.
    c = load([*mm1, "--exactly-once", "--offset.commit.interval.ms", "600000"])
    assert c.transaction_timeout_ms() == 660000
    with pytest.raises(ConfigError, match=r"offset.commit.interval.ms \(900000\) must be below"):
        load([*mm1, "--exactly-once", "--offset.commit.interval.ms", "900000"])
    producer = write("p2.properties", "bootstrap.servers=t:1\ntransaction.timeout.ms=10000\n")
    short = [mm1[0], mm1[1], "--producer.config", producer, "--whitelist", ".*"]
    with pytest.raises(ConfigError, match=r"transaction.timeout.ms \(10000\)"):
        load([*short, "--exactly-once"])
    assert not load(short).exactly_once  # without exactly-once the setting is the user's


def test_describe_names_the_guarantee(mm1: list[str]) -> None:
    from kmirror.config.describe import describe

    assert "delivery:       at-least-once" in describe(load(mm1))
    assert "delivery:       exactly-once" in describe(load([*mm1, "--exactly-once"]))

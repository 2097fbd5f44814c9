from __future__ import annotations

from collections.abc import Callable, Mapping

import pytest

from kmirror.config.describe import describe
from kmirror.errors import ConfigError
from tests.unit.config.conftest import load, parse, seed

pytestmark = pytest.mark.unit

Write = Callable[[str, str], str]
Render = Callable[[str, Mapping[str, str]], str]
KUDO = [
    "--this-bootstrap-servers",
    "a:1",
    "--external-bootstrap-servers",
    "b:1",
    "--external-cluster-type",
    "SOURCE",
]


@pytest.fixture
def mm1(write: Write) -> list[str]:
    consumer = write("c.properties", "bootstrap.servers=s:1\ngroup.id=g\nfoo=1\n")
    producer = write("p.properties", "bootstrap.servers=t:1\nbar=2\n")
    return ["--consumer.config", consumer, "--producer.config", producer, "--whitelist", ".*"]


def test_nothing_given_explains_the_three_ways() -> None:
    with pytest.raises(ConfigError) as err:
        load([])
    message = str(err.value)
    for fragment in (
        "--consumer.config",
        "--mm2.config",
        "--external-cluster-type",
        "MIRROR_MAKER_",
    ):
        assert fragment in message


def test_mixing_dialects_names_the_flags(mm1: list[str]) -> None:
    with pytest.raises(
        ConfigError,
        match=r"MirrorMaker 1: --consumer.config, --producer.config;"
        r" KUDO: --this-bootstrap-servers",
    ):
        load([*mm1, *KUDO])
    with pytest.raises(ConfigError, match=r"MirrorMaker 2: --mm2.config"):
        load([*mm1, "--mm2-config", seed("seed002-mm2.properties")])


def test_mm2_refuses_mm1_topic_flags() -> None:
    with pytest.raises(ConfigError, match=r"--whitelist cannot be combined with --mm2.config"):
        load(["--mm2.config", seed("seed002-mm2.properties"), "--whitelist", "x"])


def test_flow_without_mm2_file() -> None:
    with pytest.raises(ConfigError, match=r"--flow need --mm2.config FILE"):
        load(["--flow", "a->b"])
    with pytest.raises(ConfigError, match=r"MirrorMaker 2: --flow; KUDO"):
        load([*KUDO, "--flow", "a->b"])


@pytest.mark.parametrize(
    ("value", "expected"),
    [("TRUE", True), ("yes", True), ("1", True), ("False", False), ("no", False), ("0", False)],
)
def test_boolean_spellings(value: str, expected: bool) -> None:
    assert load([*KUDO, "--abort.on.send.failure", value]).abort_on_send_failure is expected


def test_bad_boolean_names_the_flag() -> None:
    with pytest.raises(ConfigError, match=r"--abort.on.send.failure must be true or false .*'y'"):
        load([*KUDO, "--abort.on.send.failure", "y"])


def test_bad_number_names_the_flag() -> None:
    with pytest.raises(ConfigError, match=r"--num.streams must be a whole number"):
        load([*KUDO, "--num.streams", "two"])


def test_strict_turns_all_notes_into_one_error(mm1: list[str]) -> None:
    assert len(load(mm1).notes) == 2
    with pytest.raises(ConfigError, match=r"--strict: 2 configuration warning\(s\)") as err:
        load([*mm1, "--strict"])
    assert "'foo'" in str(err.value) and "'bar'" in str(err.value)
    with pytest.raises(ConfigError, match=r"--strict"):
        load(mm1, {"KMIRROR_STRICT": "true"})
    assert load([*KUDO, "--strict"]).notes == ()


def test_common_flags_override_the_dialect() -> None:
    c = load(
        [
            "--mm2.config",
            seed("seed002-mm2.properties"),
            "--rename-policy",
            "identity",
            "--partitioning",
            "hash",
            "--replication-factor",
            "3",
            "--group-id",
            "mine",
            "--metrics-port",
            "0",
            "--log-level",
            "warn",
            "--log-format",
            "json",
            "--refresh-topics-interval-s",
            "2.5",
            "--sync-topic-configs-interval-s",
            "30",
            "--no-create-topics",
            "--abort.on.send.failure",
            "false",
        ]
    )
    assert c.target_topic("orders") == "orders"
    assert (c.partitioning, c.replication_factor, c.group_id) == ("hash", 3, "mine")
    assert c.sync_topic_configs_interval_s == 30
    assert (c.metrics_port, c.log_level, c.log_json) == (0, "WARN", True)
    assert (c.refresh_topics_interval_s, c.create_topics, c.abort_on_send_failure) == (
        2.5,
        False,
        False,
    )
    assert c.producer_conf()["partitioner"] == "murmur2_random"


def test_env_stands_in_for_common_flags_only_when_set() -> None:
    c = load(
        [*KUDO],
        {"KMIRROR_RENAME_POLICY": "prefix", "KMIRROR_SOURCE_ALIAS": "dc1", "LOG_LEVEL": "DEBUG"},
    )
    assert (c.target_topic("t"), c.log_level) == ("dc1.t", "DEBUG")
    assert load([*KUDO], {"KMIRROR_ENGINE": "auto"}).engine == "auto"
    assert load([*KUDO, "--engine", "batch"], {"KMIRROR_ENGINE": "auto"}).engine == "batch"
    c = load([*KUDO], {"KMIRROR_SYNC_TOPIC_CONFIGS_INTERVAL_S": "120"})
    assert c.sync_topic_configs_interval_s == 120
    # mm2's prefix policy is not overridden by KMIRROR_RENAME_POLICY's documented default.
    assert load(["--mm2.config", seed("seed002-mm2.properties")]).target_topic("t") == "source.t"


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--partitioning", "random", "--partitioning must be same or hash"),
        ("--engine", "turbo", "--engine must be record or batch or auto"),
        ("--rename-policy", "suffix", "--rename-policy must be identity or prefix"),
        ("--log-format", "xml", "--log-format must be text or json"),
        ("--log-level", "LOUD", "unknown log level"),
        ("--metrics-port", "70000", "metrics port must be 0..65535"),
        ("--replication-factor", "0", "replication factor must be -1"),
    ],
)
def test_invalid_common_flags(flag: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load([*KUDO, flag, value])


def test_log4j_seed001(rendered: Render) -> None:
    path = rendered("seed001-tools-log4j.properties", {"LOG_LEVEL": "WARN"})
    c = load([*KUDO, "--log4j-config", path])
    assert (c.log_level, c.log_pattern) == ("WARN", "[%d] %p %m (%c)%n")
    assert load([*KUDO, "--log4j-config", path, "--log-level", "debug"]).log_level == "DEBUG"
    with pytest.raises(ConfigError, match=r"unrendered .*\$LOG_LEVEL"):
        load([*KUDO, "--log4j-config", seed("seed001-tools-log4j.properties")])


def test_log4j2_properties(write: Write) -> None:
    path = write(
        "log4j2.properties",
        "appender.console.type=Console\n"
        "appender.console.name=STDOUT\nappender.console.layout.type=PatternLayout\n"
        "appender.console.layout.pattern=%d %-5p %c - %m%n\nrootLogger.level=error\n"
        "rootLogger.appenderRef.stdout.ref=STDOUT\n",
    )
    c = load([*KUDO, "--log4j-config", path])
    assert (c.log_level, c.log_pattern) == ("ERROR", "%d %-5p %c - %m%n")


def test_secrets_never_in_notes_errors_or_describe(write: Write) -> None:
    secret = "Zz9-super-secret-Zz9"
    jaas = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="u" password="{secret}";'
    )
    consumer = write(
        "c.properties",
        f"bootstrap.servers=s:1\ngroup.id=g\nsasl.jaas.config={jaas}"
        f"\nsecurity.protocol=SASL_SSL\nssl.key.password={secret}\n"
        f"unknown.password={secret}\nssl.truststore.password={secret}\n",
    )
    producer = write("p.properties", f"bootstrap.servers=t:1\nsasl.password={secret}\nacks=1\n")
    argv = ["--consumer.config", consumer, "--producer.config", producer, "--whitelist", ".*"]
    c = load(argv)
    assert c.notes
    assert secret not in "\n".join(c.notes) + describe(c) + repr(c)
    with pytest.raises(ConfigError) as err:
        load([*argv, "--strict"])
    assert secret not in str(err.value)
    bad = write(
        "bad.properties",
        f"bootstrap.servers=s:1\ngroup.id=g\nsasl.jaas.config="
        f'com.example.Custom required token="{secret}";\n',
    )
    with pytest.raises(ConfigError) as err:
        load(["--consumer.config", bad, "--producer.config", producer, "--whitelist", ".*"])
    assert secret not in str(err.value)


def test_parser_accepts_every_flag() -> None:
    args = parse(
        [
            "--consumer.config",
            "c",
            "--producer.config",
            "p",
            "--whitelist",
            "x",
            "--blacklist",
            "y",
            "--num.streams",
            "2",
            "--offset.commit.interval.ms",
            "9",
            "--abort.on.send.failure",
            "true",
            "--new.consumer",
            "--strict",
            "--mm2.config",
            "m",
            "--clusters",
            "b",
            "--flow",
            "a->b",
            "--this-bootstrap-servers",
            "t",
            "--external-bootstrap-servers",
            "e",
            "--external-cluster-type",
            "SOURCE",
            "--partitioning",
            "same",
            "--rename-policy",
            "prefix",
            "--source-alias",
            "s",
            "--replication-factor",
            "3",
            "--group-id",
            "g",
            "--metrics-port",
            "1",
            "--log-level",
            "INFO",
            "--log-format",
            "text",
            "--log4j-config",
            "l",
            "--no-create-topics",
            "--refresh-topics-interval-s",
            "5",
        ]
    )
    assert (args.consumer_config, args.offset_commit_interval_ms, args.mm2_config) == (
        "c",
        "9",
        "m",
    )
    assert args.no_create_topics and args.new_consumer and args.strict


def test_message_handler_is_refused(mm1: list[str]) -> None:
    with pytest.raises(
        ConfigError, match=r"--message.handler: MirrorMaker handlers and listeners are Java"
    ):
        load([*mm1, "--message.handler", "com.example.Handler"])


def test_mm2_metric_names_from_the_flag_or_the_variable() -> None:
    assert load(KUDO).mm2_metric_names is False
    assert load([*KUDO, "--mm2-metric-names"]).mm2_metric_names is True
    assert load(KUDO, {"KMIRROR_MM2_METRIC_NAMES": "true"}).mm2_metric_names is True
    with pytest.raises(ConfigError, match="KMIRROR_MM2_METRIC_NAMES"):
        load(KUDO, {"KMIRROR_MM2_METRIC_NAMES": "sometimes"})

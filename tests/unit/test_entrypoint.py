"""The container entrypoint without a container: the plan it builds from the environment, the
files it writes, what it logs, the configuration it hands to the mirror."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kmirror.cli import main as cli_main
from kmirror.cli import run as cli_run
from kmirror.cli.flags import options_from
from kmirror.config.dialects.options import Options
from kmirror.config.model import MirrorConfig
from kmirror.config.secret import Secret
from kmirror.entrypoint.render import (
    CONSUMER,
    LOG4J,
    PRODUCER,
    build_plan,
    plan_config,
    write_files,
)
from kmirror.errors import ConfigError

pytestmark = pytest.mark.unit

BASE = {
    "SOURCE_CLUSTER_BOOTSTRAP_SERVERS": "src:9092",
    "SINK_CLUSTER_BOOTSTRAP_SERVERS": "dst:9092",
}
SECRET_LINE = "sasl.password=${SOURCE_CLUSTER_SASL_PASSWORD}"
KUDO = {
    "MIRROR_MAKER_THIS_BOOTSTRAP_SERVERS": "this:9092",
    "MIRROR_MAKER_EXTERNAL_BOOTSTRAP_SERVERS": "ext:9092",
}


@pytest.fixture
def environ(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[dict[str, str]]:
    """A clean process environment (nothing of the developer's leaks in), given back whole
    afterwards: the entrypoint itself copies .env values into os.environ, which monkeypatch
    does not know of, and a later test's `kmirror` subprocess would inherit them."""
    saved = dict(os.environ)
    for key in list(os.environ):
        if key not in ("PATH", "HOME", "LANG"):
            monkeypatch.delenv(key)
    env = {"KMIRROR_CONFIG_DIR": str(tmp_path / "rendered")}
    yield env
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    """The entrypoint configures the root logger (as it should): undo that after every test.
    A handler left on the root logger writes to this test's captured stderr, which pytest
    closes; py4j's finalizers log into it at interpreter exit ("--- Logging error ---" after
    the summary of a run that also has the Spark tests)."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def props(plan_env: dict[str, str], name: str) -> dict[str, str]:
    return {k: str(v) for k, v in build_plan(plan_env).file(name).props.items()}


# --------------------------------------------------------------------------- seed names


def test_seed_names_render_the_three_files_and_the_flags(environ: dict[str, str]) -> None:
    env = {
        **environ,
        **BASE,
        "WHITELISTED_TOPICS": "orders|pay",
        "NUM_STREAMS": "3",
        "SOURCE_CLUSTER_CONSUMER_GROUP": "g1",
        "LOG_LEVEL": "WARN",
        "BLACKLISTED_TOPICS": "tmp.*",
    }
    plan = build_plan(env)
    assert props(env, CONSUMER) == {
        "bootstrap.servers": "src:9092",
        "group.id": "g1",
        "auto.offset.reset": "earliest",
        "security.protocol": "PLAINTEXT",
    }
    assert props(env, PRODUCER) == {
        "bootstrap.servers": "dst:9092",
        "security.protocol": "PLAINTEXT",
    }
    assert props(env, LOG4J)["log4j.rootLogger"] == "WARN, stdout"
    d = Path(environ["KMIRROR_CONFIG_DIR"])
    assert plan.argv() == [
        "run",
        "--consumer.config",
        str(d / CONSUMER),
        "--producer.config",
        str(d / PRODUCER),
        "--log4j-config",
        str(d / LOG4J),
        "--whitelist",
        "orders|pay",
        "--blacklist",
        "tmp.*",
        "--num.streams",
        "3",
        "--offset.commit.interval.ms",
        "60000",
        "--abort.on.send.failure",
        "true",
    ]


@pytest.mark.parametrize(
    ("missing", "message"),
    [
        ("SOURCE_CLUSTER_BOOTSTRAP_SERVERS", "SOURCE_CLUSTER_BOOTSTRAP_SERVERS"),
        ("SINK_CLUSTER_BOOTSTRAP_SERVERS", "SINK_CLUSTER_BOOTSTRAP_SERVERS"),
    ],
)
def test_missing_bootstrap_is_exit_2_naming_it(
    environ: dict[str, str], missing: str, message: str
) -> None:
    env = {**environ, **BASE}
    del env[missing]
    with pytest.raises(ConfigError) as err:
        build_plan(env)
    assert message in str(err.value)
    assert err.value.exit_code == 2


@pytest.mark.parametrize(
    ("var", "value", "message"),
    [
        ("NUM_STREAMS", "zero", "NUM_STREAMS must be a whole number"),
        ("MIRROR_MAKER_NUM_STREAMS", "0", "MIRROR_MAKER_NUM_STREAMS must be >= 1"),
        ("MIRROR_MAKER_OFFSET_COMMIT_INTERVAL", "soon", "MIRROR_MAKER_OFFSET_COMMIT_INTERVAL"),
        ("MIRROR_MAKER_ABORT_ON_SEND_FAILURE", "maybe", "MIRROR_MAKER_ABORT_ON_SEND_FAILURE"),
        ("SOURCE_CLUSTER_SECURITY_PROTOCOL", "TLS", "SOURCE_CLUSTER_SECURITY_PROTOCOL"),
    ],
)
def test_bad_values_name_the_variable(
    environ: dict[str, str], var: str, value: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        build_plan({**environ, **BASE, var: value})


def test_kudo_names_override_the_seed_names(environ: dict[str, str]) -> None:
    env = {
        **environ,
        **BASE,
        "WHITELISTED_TOPICS": "a",
        "MIRROR_MAKER_TOPIC_WHITELIST": "b",
        "NUM_STREAMS": "2",
        "MIRROR_MAKER_NUM_STREAMS": "5",
        "MIRROR_MAKER_OFFSET_COMMIT_INTERVAL": "1000",
        "MIRROR_MAKER_ABORT_ON_SEND_FAILURE": "no",
    }
    options = build_plan(env).options
    assert options == Options(
        whitelist="b", num_streams=5, offset_commit_interval_ms=1000, abort_on_send_failure=False
    )
    config = plan_config(build_plan(env))
    assert config.topics.include == ("b",)
    assert (config.num_streams, config.offset_commit_interval_ms) == (5, 1000)
    assert config.abort_on_send_failure is False


# --------------------------------------------------------------------------- KUDO mode


@pytest.mark.parametrize(
    ("kind", "source", "sink"),
    [("SOURCE", "ext:9092", "this:9092"), ("destination", "this:9092", "ext:9092")],
)
def test_kudo_mode_maps_this_and_external(
    environ: dict[str, str], kind: str, source: str, sink: str
) -> None:
    env = {**environ, **KUDO, "MIRROR_MAKER_EXTERNAL_CLUSTER_TYPE": kind}
    assert props(env, CONSUMER)["bootstrap.servers"] == source
    assert props(env, PRODUCER)["bootstrap.servers"] == sink


@pytest.mark.parametrize("kind", ["", "SINK", "both"])
def test_kudo_mode_with_a_bad_type_is_exit_2(environ: dict[str, str], kind: str) -> None:
    env = {**environ, **KUDO, "MIRROR_MAKER_EXTERNAL_CLUSTER_TYPE": kind}
    with pytest.raises(ConfigError) as err:
        build_plan(env)
    text = str(err.value)
    assert "MIRROR_MAKER_EXTERNAL_CLUSTER_TYPE" in text
    assert "SOURCE" in text and "DESTINATION" in text and repr(kind) in text


def test_kudo_mode_needs_this_cluster(environ: dict[str, str]) -> None:
    env = {
        **environ,
        "MIRROR_MAKER_EXTERNAL_BOOTSTRAP_SERVERS": "ext:1",
        "MIRROR_MAKER_EXTERNAL_CLUSTER_TYPE": "SOURCE",
    }
    with pytest.raises(ConfigError, match="MIRROR_MAKER_THIS_BOOTSTRAP_SERVERS is not set"):
        build_plan(env)


def test_kudo_mode_refuses_a_contradicting_seed_variable(environ: dict[str, str]) -> None:
    env = {
        **environ,
        **KUDO,
        "MIRROR_MAKER_EXTERNAL_CLUSTER_TYPE": "SOURCE",
        "SOURCE_CLUSTER_BOOTSTRAP_SERVERS": "elsewhere:1",
    }
    with pytest.raises(ConfigError, match="SOURCE_CLUSTER_BOOTSTRAP_SERVERS='elsewhere:1'"):
        build_plan(env)
    env["SOURCE_CLUSTER_BOOTSTRAP_SERVERS"] = "ext:9092"  # agreeing is fine
    assert props(env, CONSUMER)["bootstrap.servers"] == "ext:9092"


# --------------------------------------------------------------------------- security


def test_sasl_from_env_with_password_file(environ: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "pw").write_text("hunter2-secret\n")
    env = {
        **environ,
        **BASE,
        "SINK_CLUSTER_SECURITY_PROTOCOL": "SASL_SSL",
        "SINK_CLUSTER_SASL_MECHANISM": "SCRAM-SHA-512",
        "SINK_CLUSTER_SASL_USERNAME": "bob",
        "SINK_CLUSTER_SASL_PASSWORD_FILE": str(tmp_path / "pw"),
        "SINK_CLUSTER_SSL_CA_LOCATION": "/certs/ca.pem",
    }
    plan = build_plan(env)
    producer = plan.file(PRODUCER)
    assert isinstance(producer.props["sasl.password"], Secret)
    assert "hunter2-secret" not in producer.masked()
    assert "sasl.password=***" in producer.masked()
    assert "sasl.password=hunter2-secret" in producer.text()
    assert plan.secrets() == ["hunter2-secret"]
    assert str(producer.props["ssl.ca.location"]) == "/certs/ca.pem"


def test_template_that_sets_security_owns_it(environ: dict[str, str], tmp_path: Path) -> None:
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / CONSUMER).write_text(
        "bootstrap.servers=${SOURCE_CLUSTER_BOOTSTRAP_SERVERS}\ngroup.id=g\n"
        "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=/ca.pem\n"
    )
    (templates / "README").write_text("not a template")
    env = {
        **environ,
        **BASE,
        "KMIRROR_TEMPLATE_DIR": str(templates),
        "SOURCE_CLUSTER_SECURITY_PROTOCOL": "SASL_SSL",
    }
    plan = build_plan(env)
    assert "sasl.mechanism" not in plan.file(CONSUMER).props
    assert plan.origins[CONSUMER] == str(templates / CONSUMER)
    assert plan.origins[PRODUCER] == f"built-in {PRODUCER}"
    notes = "\n".join(plan.notes)
    assert "SOURCE_CLUSTER_SECURITY_PROTOCOL ignored: consumer.properties sets" in notes
    assert "README ignored" in notes
    env["KMIRROR_STRICT"] = "true"
    with pytest.raises(ConfigError, match="KMIRROR_STRICT: 2 configuration warning"):
        build_plan(env)


def test_extra_properties_are_expanded_and_win(environ: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "pw").write_text("xyzzy-123")
    env = {
        **environ,
        **BASE,
        "SOURCE_CLUSTER_SASL_PASSWORD_FILE": str(tmp_path / "pw"),
        "KMIRROR_EXTRA_CONSUMER_PROPERTIES": "auto.offset.reset=latest\n" + SECRET_LINE,
    }
    consumer = build_plan(env).file(CONSUMER)
    assert consumer.get("auto.offset.reset") == "latest"
    assert consumer.get("sasl.password") == "***"
    assert "sasl.password=xyzzy-123" in consumer.text()


# --------------------------------------------------------------------------- files


def test_files_are_private_and_overwritten(environ: dict[str, str]) -> None:
    env = {**environ, **BASE}
    directory = Path(environ["KMIRROR_CONFIG_DIR"])
    directory.mkdir(mode=0o755)
    (directory / CONSUMER).write_text("stale")
    os.chmod(directory / CONSUMER, 0o644)
    write_files(build_plan(env))
    for name in (CONSUMER, PRODUCER, LOG4J):
        mode = stat.S_IMODE((directory / name).stat().st_mode)
        assert mode == 0o600, f"{name}: {oct(mode)}"
    assert "stale" not in (directory / CONSUMER).read_text()
    assert sorted(p.name for p in directory.iterdir()) == sorted([CONSUMER, PRODUCER, LOG4J])


def test_unwritable_config_dir_is_exit_2(environ: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    env = {**environ, **BASE, "KMIRROR_CONFIG_DIR": str(tmp_path / "file" / "sub")}
    with pytest.raises(ConfigError, match="KMIRROR_CONFIG_DIR"):
        write_files(build_plan(env))


# --------------------------------------------------------------------------- commands


def test_render_prints_masked_and_writes_nothing(
    environ: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "pw").write_text("do-not-print-me")
    env = {
        **environ,
        **BASE,
        "SOURCE_CLUSTER_SASL_PASSWORD_FILE": str(tmp_path / "pw"),
        "KMIRROR_EXTRA_CONSUMER_PROPERTIES": SECRET_LINE,
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert cli_main.main(["render"]) == 0
    out, err = capsys.readouterr()
    assert "do-not-print-me" not in out + err
    assert "sasl.password=***" in out
    assert "kmirror run --consumer.config" in out
    assert not Path(environ["KMIRROR_CONFIG_DIR"]).exists()
    assert cli_main.main(["render", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["files"][CONSUMER]["properties"]["sasl.password"] == "***"
    assert doc["command"][:2] == ["kmirror", "run"]


def test_render_reports_a_missing_variable_with_exit_2(
    environ: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SINK_CLUSTER_BOOTSTRAP_SERVERS", "dst:1")
    assert cli_main.main(["render"]) == 2
    assert "SOURCE_CLUSTER_BOOTSTRAP_SERVERS" in capsys.readouterr().err


def test_render_checks_like_run(
    environ: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for key, value in {**BASE, "KMIRROR_EXTRA_PRODUCER_PROPERTIES": "linger.ms=soon"}.items():
        monkeypatch.setenv(key, value)
    assert cli_main.main(["render"]) == 2
    assert "linger.ms" in capsys.readouterr().err


class FakeStart:
    """Stands in for the mirror (`kmirror.cli.run.start`): records the configuration."""

    def __init__(self, code: int = 0) -> None:
        self.code = code
        self.configs: list[MirrorConfig] = []

    def __call__(self, config: MirrorConfig) -> int:
        self.configs.append(config)
        return self.code


def _entrypoint_args(*args: str) -> argparse.Namespace:
    return cli_main.build_parser().parse_args(["entrypoint", *args])


def _run_entrypoint(*args: str) -> int:
    parsed = _entrypoint_args(*args)
    code: int = parsed.handler(parsed)
    return code


def test_entrypoint_writes_logs_masked_and_runs_the_mirror(
    environ: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "pw").write_text("very-secret-pw")
    env_file = tmp_path / ".env"
    env_file.write_text("KMIRROR_PARTITIONING=hash\nSOURCE_CLUSTER_CONSUMER_GROUP=from-dotenv\n")
    env = {
        **environ,
        **BASE,
        "KMIRROR_ENV_FILE": str(env_file),
        "SOURCE_CLUSTER_SASL_PASSWORD_FILE": str(tmp_path / "pw"),
        "KMIRROR_EXTRA_CONSUMER_PROPERTIES": SECRET_LINE,
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    # The entrypoint copies the .env file into os.environ: let monkeypatch take those keys back
    # afterwards, or every later test of the session (and the mirrors it starts) inherits
    # KMIRROR_PARTITIONING=hash.
    for key in ("KMIRROR_PARTITIONING", "SOURCE_CLUSTER_CONSUMER_GROUP"):
        monkeypatch.setenv(key, "")
        monkeypatch.delenv(key)
    start = FakeStart(code=7)
    monkeypatch.setattr(cli_run, "start", start)
    code = _run_entrypoint()
    log = capsys.readouterr().err
    assert code == 7  # the mirror's code is the container's
    (config,) = start.configs
    assert config.dialect == "mm1"
    assert config.group_id == "from-dotenv"
    assert config.partitioning == "hash"  # the .env reaches the mirror
    assert config.source.bootstrap_servers == "src:9092"
    assert config.target.bootstrap_servers == "dst:9092"
    password = config.source.common["sasl.password"]
    assert isinstance(password, Secret) and password.reveal() == "very-secret-pw"
    rendered = Path(environ["KMIRROR_CONFIG_DIR"]) / CONSUMER
    assert "group.id=from-dotenv" in rendered.read_text()  # written for people to read
    assert "very-secret-pw" in rendered.read_text()
    assert "very-secret-pw" not in log
    assert "sasl.password=***" in log
    assert "starting: kmirror run --consumer.config" in log


def test_rendered_values_reach_the_mirror_verbatim(
    environ: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A '$' in a rendered value is part of it: the mirror never reads the files back, so
    nothing can take it for an unrendered placeholder."""
    # (A user name: the group id cannot hold a '$', kmirror's topic names take it.)
    user = "team-$SOURCE_CLUSTER_BOOTSTRAP_SERVERS-${X}"
    password = tmp_path / "password"
    password.write_text("pw")
    sasl = {
        "SOURCE_CLUSTER_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
        "SOURCE_CLUSTER_SASL_MECHANISM": "PLAIN",
        "SOURCE_CLUSTER_SASL_USERNAME": user,
        "SOURCE_CLUSTER_SASL_PASSWORD_FILE": str(password),
    }
    for key, value in {**environ, **BASE, **sasl}.items():
        monkeypatch.setenv(key, value)
    start = FakeStart()
    monkeypatch.setattr(cli_run, "start", start)
    assert _run_entrypoint() == 0
    assert start.configs[0].consumer_conf()["sasl.username"] == user


def test_the_loaded_configuration_is_the_files_configuration(environ: dict[str, str]) -> None:
    """What the entrypoint hands on is what `kmirror run` builds from the written files (the
    command it logs), so people can rerun it by hand."""
    env = {**environ, **BASE, "WHITELISTED_TOPICS": "orders", "EXACTLY_ONCE": "true",
           "KMIRROR_EXTRA_PRODUCER_PROPERTIES": "linger.ms=20"}  # fmt: skip
    plan = build_plan(env)
    write_files(plan)
    from_files = options_from(cli_main.build_parser().parse_args(plan.argv()))
    from kmirror.config.dialects.loader import load_config

    assert plan_config(plan) == load_config(from_files, plan.environ)


def test_sigterm_before_the_mirror_starts_exits_0(
    environ: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in {**environ, **BASE}.items():
        monkeypatch.setenv(key, value)

    def slow_start(config: MirrorConfig) -> int:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
        raise AssertionError("SIGTERM did not stop the entrypoint")

    monkeypatch.setattr(cli_run, "start", slow_start)
    before = signal.getsignal(signal.SIGTERM)
    assert _run_entrypoint() == 0
    assert signal.getsignal(signal.SIGTERM) is before


# ------------------------------------------------------------- arguments (Kubernetes `args`)


def test_flags_after_entrypoint_reach_the_mirror(
    environ: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for key, value in {**environ, **BASE, "WHITELISTED_TOPICS": "a"}.items():
        monkeypatch.setenv(key, value)
    start = FakeStart()
    monkeypatch.setattr(cli_run, "start", start)
    args = ("--no-create-topics", "--refresh-topics-interval-s", "30", "--whitelist", "b")
    assert _run_entrypoint(*args) == 0
    (config,) = start.configs
    assert config.create_topics is False
    assert config.refresh_topics_interval_s == 30
    assert config.topics.include == ("b",)  # a flag wins over the environment
    assert capsys.readouterr().err.count("--no-create-topics --refresh-topics-interval-s 30") == 1


def test_a_file_flag_after_entrypoint_is_refused(
    environ: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for key, value in {**environ, **BASE}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(cli_run, "start", FakeStart())
    mine = str(tmp_path / "mine.properties")
    assert cli_main.main(["entrypoint", "--consumer.config", mine]) == 2
    with pytest.raises(ConfigError, match=r"--consumer.config cannot follow .*run --consumer"):
        plan_config(build_plan({**environ, **BASE}), Options(consumer_config=mine))


def test_a_command_after_entrypoint_runs_as_given_without_rendering(
    environ: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for key, value in environ.items():
        monkeypatch.setenv(key, value)  # no cluster variables: rendering would fail
    seen: list[list[str]] = []
    monkeypatch.setattr(cli_main, "main", lambda argv: seen.append(list(argv)) or 3)
    mm2 = str(tmp_path / "mm2.properties")
    assert _run_entrypoint("run", "--mm2-config", mm2, "--flow", "a->b") == 3
    assert seen == [["run", "--mm2-config", mm2, "--flow", "a->b"]]
    assert not Path(environ["KMIRROR_CONFIG_DIR"]).exists()


def test_entrypoint_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run_entrypoint("--help") == 0
    assert "run --mm2-config" in " ".join(capsys.readouterr().out.split())

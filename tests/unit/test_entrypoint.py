"""The container entrypoint without a container: the plan it builds from the environment, the
files it writes, what it logs, how it hands over to the mirror."""

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
from kmirror.config.secret import Secret
from kmirror.entrypoint import commands
from kmirror.entrypoint.render import CONSUMER, LOG4J, PRODUCER, build_plan, write_files
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


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """The entrypoint configures the root logger (as it should): undo that after the test."""
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
        "--num.streams",
        "3",
        "--offset.commit.interval.ms",
        "60000",
        "--abort.on.send.failure",
        "true",
        "--blacklist",
        "tmp.*",
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
    assert options == (
        "--whitelist",
        "b",
        "--num.streams",
        "5",
        "--offset.commit.interval.ms",
        "1000",
        "--abort.on.send.failure",
        "false",
    )


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


@pytest.mark.usefixtures("restore_logging")
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
    seen: list[list[str]] = []

    def fake_main(argv: list[str]) -> int:
        seen.append(list(argv))
        assert os.environ["KMIRROR_PARTITIONING"] == "hash"  # the .env reaches the mirror
        return 7

    monkeypatch.setattr(cli_main, "main", fake_main)
    code = commands.entrypoint(argparse.Namespace())
    log = capsys.readouterr().err
    assert code == 7  # the mirror's code is the container's
    assert seen and seen[0][:2] == ["run", "--consumer.config"]
    rendered = Path(environ["KMIRROR_CONFIG_DIR"]) / CONSUMER
    assert "group.id=from-dotenv" in rendered.read_text()
    assert "very-secret-pw" in rendered.read_text()
    assert "very-secret-pw" not in log
    assert "sasl.password=***" in log
    assert "starting: kmirror run --consumer.config" in log


@pytest.mark.usefixtures("restore_logging")
def test_sigterm_before_the_mirror_starts_exits_0(
    environ: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in {**environ, **BASE}.items():
        monkeypatch.setenv(key, value)

    def slow_main(argv: list[str]) -> int:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
        raise AssertionError("SIGTERM did not stop the entrypoint")

    monkeypatch.setattr(cli_main, "main", slow_main)
    before = signal.getsignal(signal.SIGTERM)
    assert commands.entrypoint(argparse.Namespace()) == 0
    assert signal.getsignal(signal.SIGTERM) is before


# ------------------------------------------------------------- arguments (Kubernetes `args`)


def _entrypoint_args(*args: str) -> argparse.Namespace:
    return cli_main.build_parser().parse_args(["entrypoint", *args])


@pytest.mark.usefixtures("restore_logging")
def test_flags_after_entrypoint_reach_the_rendered_run(
    environ: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in {**environ, **BASE}.items():
        monkeypatch.setenv(key, value)
    seen: list[list[str]] = []
    monkeypatch.setattr(cli_main, "main", lambda argv: seen.append(list(argv)) or 0)
    args = _entrypoint_args("--no-create-topics", "--refresh-topics-interval-s", "30")
    assert commands.entrypoint(args) == 0
    assert seen[0][:2] == ["run", "--consumer.config"]
    assert seen[0][-3:] == ["--no-create-topics", "--refresh-topics-interval-s", "30"]
    # ... and they are real `kmirror run` flags: the rendered command line loads with them.
    assert cli_main.build_parser().parse_args(seen[0]).no_create_topics is True


def test_a_command_after_entrypoint_runs_as_given_without_rendering(
    environ: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for key, value in environ.items():
        monkeypatch.setenv(key, value)  # no cluster variables: rendering would fail
    seen: list[list[str]] = []
    monkeypatch.setattr(cli_main, "main", lambda argv: seen.append(list(argv)) or 3)
    mm2 = str(tmp_path / "mm2.properties")
    assert commands.entrypoint(_entrypoint_args("run", "--mm2-config", mm2, "--flow", "a->b")) == 3
    assert seen == [["run", "--mm2-config", mm2, "--flow", "a->b"]]
    assert not Path(environ["KMIRROR_CONFIG_DIR"]).exists()


def test_entrypoint_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert commands.entrypoint(_entrypoint_args("--help")) == 0
    assert "run --mm2-config" in capsys.readouterr().out

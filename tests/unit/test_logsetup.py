from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest

from kmirror import logsetup
from kmirror.config.model import ClusterConfig, MirrorConfig
from kmirror.config.secret import seal
from kmirror.errors import ConfigError

pytestmark = pytest.mark.unit


@pytest.fixture
def root() -> Iterator[logging.Logger]:
    """The root logger, given back as it was (pytest's own handlers included)."""
    r = logging.getLogger()
    handlers, level = r.handlers[:], r.level
    yield r
    r.handlers[:] = handlers
    r.setLevel(level)


def test_configure_installs_one_redacting_handler(
    root: logging.Logger, monkeypatch: pytest.MonkeyPatch
) -> None:
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    logsetup.configure("WARN", pattern="%p %c: %m", secrets=["hunter22"])
    assert len(root.handlers) == 1 and root.level == logging.WARNING
    logging.getLogger("kmirror.x").warning("password is %s", "hunter22")
    logging.getLogger("kmirror.x").info("not shown")
    assert err.getvalue() == "WARNING kmirror.x: password is ***\n"


def test_configure_without_replace_keeps_existing_handlers(root: logging.Logger) -> None:
    mine = logging.NullHandler()
    root.handlers[:] = [mine]
    root.setLevel(logging.ERROR)
    logsetup.configure("DEBUG", replace=False)
    assert root.handlers == [mine] and root.level == logging.ERROR
    root.handlers[:] = []
    logsetup.configure("DEBUG", replace=False)
    assert len(root.handlers) == 1 and root.level == logging.DEBUG


def test_a_mirror_process_logs_as_its_config_says_and_masks_its_secrets(
    root: logging.Logger, monkeypatch: pytest.MonkeyPatch
) -> None:
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    source = ClusterConfig("source", "s:1", common=seal({"sasl.password": "hunter22"}))
    config = MirrorConfig(
        source, ClusterConfig("target", "t:1"), "g", log_level="ERROR", log_pattern="%p %m%n"
    )
    logsetup.configure_for(config)
    logging.getLogger("kmirror.x").error("password is hunter22")
    logging.getLogger("kmirror.x").warning("not shown")
    assert err.getvalue() == "ERROR password is ***\n"


def test_the_entrypoint_names_a_bad_log_format(root: logging.Logger) -> None:
    with pytest.raises(ConfigError, match="KMIRROR_LOG_FORMAT must be text or json, not 'xml'"):
        logsetup.configure_from_env({"KMIRROR_LOG_FORMAT": "xml"}, [])


def test_kafka_python_connection_chatter_is_quiet_unless_debugging(
    root: logging.Logger, monkeypatch: pytest.MonkeyPatch
) -> None:
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    kafka = logging.getLogger("kafka.net.connection")
    logsetup.configure("INFO", pattern="%p %c: %m")
    kafka.info("Connected")
    kafka.warning("connection lost")
    logging.getLogger("kmirror.x").info("copying")
    assert err.getvalue() == (
        "WARNING kafka.net.connection: connection lost\nINFO kmirror.x: copying\n"
    )
    logsetup.configure("DEBUG", pattern="%p %c: %m")
    kafka.info("Connected")
    assert err.getvalue().endswith("INFO kafka.net.connection: Connected\n")
    logging.getLogger("kafka").setLevel(logging.NOTSET)


def test_a_starting_brokers_retries_are_debug_for_a_minute(
    root: logging.Logger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """librdkafka's own words (confluent-kafka logs `%s [%s] %s` with facility, client, text),
    as a fresh cluster gives them: hidden while the broker starts, shown when it lasts."""
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    clock = [1000.0]
    monkeypatch.setattr("kmirror.logsetup.time.monotonic", lambda: clock[0])
    rdkafka = logging.getLogger("kmirror.librdkafka")
    monkeypatch.setattr(rdkafka, "filters", [])
    pid = ("GETPID", "rdkafka#producer-1", "[thrd:main]: Failed to acquire idempotence PID from "
           "broker 127.0.0.1:31392/1: Broker: Coordinator load in progress: retrying")  # fmt: skip
    refused = ("FAIL", "rdkafka#producer-1", "[thrd:b/1]: Connect to ipv4#127.0.0.1:1 failed")
    logsetup.configure("INFO", pattern="%p %m")
    rdkafka.log(logging.WARNING, "%s [%s] %s", *pid)
    rdkafka.log(logging.WARNING, "%s [%s] %s", *refused)
    assert err.getvalue() == f"WARNING {' '.join(refused[:1])} [{refused[1]}] {refused[2]}\n"
    clock[0] += 61  # still loading a minute later: a broker with a problem
    rdkafka.log(logging.WARNING, "%s [%s] %s", *pid)
    assert err.getvalue().endswith("WARNING GETPID [rdkafka#producer-1] " + pid[2] + "\n")
    logsetup.configure("DEBUG", pattern="%p %m")
    rdkafka.log(logging.WARNING, "%s [%s] %s", *pid[:2], pid[2].replace("31392", "31393"))
    assert "DEBUG GETPID" in err.getvalue().splitlines()[-1]


def test_a_socket_error_on_the_batch_path_is_one_line(
    root: logging.Logger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kafka-python's words when a broker resets a connection under the batch path: an ERROR
    and the socket's traceback. One ERROR line naming the exception instead, like its other
    connection lines; other errors keep their traceback, and DEBUG keeps everything."""
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    transport = logging.getLogger("kafka.net.transport")
    monkeypatch.setattr(transport, "filters", [])
    logsetup.configure("INFO", pattern="%p %m")

    def failing(exc: BaseException) -> None:
        try:
            raise exc
        except BaseException:
            transport.exception("%s: Error receiving network data closing socket", "<conn b-1>")

    failing(ConnectionResetError(104, "Connection reset by peer"))
    transport.error("%s: socket disconnected", "<conn b-2>")
    assert err.getvalue().splitlines() == [
        "ERROR <conn b-1>: Error receiving network data closing socket: "
        "ConnectionResetError: [Errno 104] Connection reset by peer",
        "ERROR <conn b-2>: socket disconnected",
    ]
    failing(ValueError("a bug, not a broker"))
    assert "Traceback" in err.getvalue() and "ValueError: a bug" in err.getvalue()

    err.truncate(0)
    err.seek(0)
    logsetup.configure("DEBUG", pattern="%p %m")
    failing(ConnectionResetError(104, "Connection reset by peer"))
    assert err.getvalue().startswith("ERROR <conn b-1>") and "Traceback" in err.getvalue()

"""Logging for every kmirror process, set up here and only here: `configure` is the one
handler; `configure_for` (a mirror process, from its config) and `configure_from_env` (the
container entrypoint, before any config is loaded) feed it. Entry points call these; modules
just log."""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kmirror.config.model import MirrorConfig

# log4j ConversionPattern tokens users bring from tools-log4j.properties.
_LOG4J_TOKENS = {
    "%d": "%(asctime)s",
    "%p": "%(levelname)s",
    "%m": "%(message)s",
    "%c": "%(name)s",
    "%t": "%(threadName)s",
    "%n": "",
}
DEFAULT_PATTERN = "[%(asctime)s] %(levelname)s %(message)s (%(name)s)"
_LEVELS = {"TRACE": "DEBUG", "WARN": "WARNING", "FATAL": "CRITICAL", "OFF": "CRITICAL"}


def python_level(level: str) -> int:
    name = _LEVELS.get(level.upper(), level.upper())
    value = logging.getLevelName(name)
    return value if isinstance(value, int) else logging.INFO


def from_log4j_pattern(pattern: str) -> str:
    out = re.sub(r"%-?\d*([dpmctn])(\{[^}]*\})?", lambda m: _LOG4J_TOKENS["%" + m[1]], pattern)
    return out.rstrip() or DEFAULT_PATTERN


class Redactor(logging.Filter):
    """Last line of defence: a secret value that slipped into a message is masked."""

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self._secrets = sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True)

    def filter(self, record: logging.LogRecord) -> bool:
        if self._secrets:
            msg = record.getMessage()
            masked = msg
            for s in self._secrets:
                masked = masked.replace(s, "***")
            if masked != msg:
                record.msg, record.args = masked, None
        return True


class StartingBroker(logging.Filter):
    """librdkafka's warnings that a broker is still starting while the client retries (a fresh
    cluster's coordinators loading, a producer id not yet allocated: "Failed to acquire
    idempotence PID ...: Coordinator load in progress: retrying") are DEBUG lines for their
    first minute; a broker still there after that has a problem, and they show as they are."""

    STATES = re.compile(r"Coordinator load in progress|Coordinator not available")
    GRACE_S = 60.0

    def __init__(self) -> None:
        super().__init__()
        self._since: dict[str, float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if record.levelno != logging.WARNING or not text.endswith("retrying"):
            return True
        if not self.STATES.search(text):
            return True
        first = self._since.setdefault(text, time.monotonic())
        if time.monotonic() - first > self.GRACE_S or len(self._since) > 1000:
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        # The process's level: kmirror.librdkafka itself stays at INFO or above.
        return logging.getLogger().isEnabledFor(logging.DEBUG)


class LostConnection(logging.Filter):
    """kafka-python (the batch path's protocol) logs a socket error on a connection (a broker
    killed, a connection reset) with the socket's whole traceback: a dozen lines per
    connection, where every other line about a lost or refused connection (its own, and
    librdkafka's on the record path) is one ERROR line naming the error, and the client
    reconnects by itself either way. So this one is one line too, naming the exception. Not a
    socket error: shown as it is; DEBUG keeps the traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if not isinstance(exc, OSError) or logging.getLogger().isEnabledFor(logging.DEBUG):
            return True
        record.msg, record.args = f"{record.getMessage()}: {type(exc).__name__}: {exc}", None
        record.exc_info = None
        record.exc_text = None
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "process": record.processName,
            "message": record.getMessage(),
        }
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        return json.dumps(doc)


def configure(
    level: str = "INFO",
    fmt: str = "text",
    pattern: str | None = None,
    secrets: Iterable[str] = (),
    replace: bool = True,
) -> None:
    """The one stderr handler of the process: level (log4j names too), text with a log4j
    pattern or JSON, secrets masked. `replace=False` leaves a process that already has
    handlers alone (a test runner's, an embedding application's), as logging.basicConfig does.
    """
    root = logging.getLogger()
    if not replace and root.handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(
            logging.Formatter(from_log4j_pattern(pattern) if pattern else DEFAULT_PATTERN)
        )
    handler.addFilter(Redactor(secrets))
    root.handlers[:] = [handler]
    set_level(level)
    # A starting broker's retries are not news.
    librdkafka = logging.getLogger("kmirror.librdkafka")
    if not any(isinstance(f, StartingBroker) for f in librdkafka.filters):
        librdkafka.addFilter(StartingBroker())
    # A socket error on the batch path is one line, as every other connection error.
    transport = logging.getLogger("kafka.net.transport")
    if not any(isinstance(f, LostConnection) for f in transport.filters):
        transport.addFilter(LostConnection())


def set_level(level: str) -> None:
    """The process's log level (log4j names too), with the chatty libraries kept quieter: at
    start and when a reloaded configuration changes it (kmirror.app.reload)."""
    logging.getLogger().setLevel(python_level(level))
    # librdkafka is chatty at DEBUG and its INFO is what operators need.
    librdkafka = logging.getLogger("kmirror.librdkafka")
    librdkafka.setLevel(max(python_level(level), logging.INFO))
    # kafka-python (the batch path's protocol) logs every connection's life at INFO: a dozen
    # lines each time the batch path (re)starts. Its warnings stay; DEBUG shows everything.
    quiet = python_level(level) > logging.DEBUG
    logging.getLogger("kafka").setLevel(
        max(python_level(level), logging.WARNING) if quiet else python_level(level)
    )
    # The schema registry client's HTTP library logs every request at INFO.
    for name in ("httpx2", "httpcore2"):
        logging.getLogger(name).setLevel(
            max(python_level(level), logging.WARNING) if quiet else python_level(level)
        )


def configure_for(config: MirrorConfig, *others: MirrorConfig) -> None:
    """A mirror process (`kmirror run` and each stream process): the config's level, format
    and log4j pattern, with every credential of the config masked, and of the `others` (the
    other flows of the process: their level and format are the same)."""
    configure(
        config.log_level,
        "json" if config.log_json else "text",
        config.log_pattern,
        [s for c in (config, *others) for s in config_secrets(c)],
    )


def config_secrets(config: MirrorConfig) -> list[str]:
    from kmirror.config.secret import Secret

    values: list[str] = []
    for cluster in (config.source, config.target):
        for conf in (cluster.common, cluster.consumer, cluster.producer, cluster.admin):
            values += [v.reveal() for v in conf.values() if isinstance(v, Secret)]
    if config.schemas is not None:  # the schema registries' password or token
        for end in (config.schemas.source, config.schemas.target):
            values += [s.reveal() for s in (end.basic_auth_password, end.bearer_token) if s]
    return values


def configure_from_env(environ: Mapping[str, str], secrets: Iterable[str]) -> None:
    """The container entrypoint, before any config is loaded: LOG_LEVEL, KMIRROR_LOG_FORMAT."""
    from kmirror.config import env as envvars
    from kmirror.config.dialects.log4j import FORMATS, check_level
    from kmirror.errors import ConfigError

    level = check_level(envvars.get("LOG_LEVEL", environ), "LOG_LEVEL")
    fmt = envvars.get("KMIRROR_LOG_FORMAT", environ).strip().lower()
    if fmt not in FORMATS:
        raise ConfigError(f"KMIRROR_LOG_FORMAT must be text or json, not {fmt!r}")
    configure(level, fmt, secrets=secrets)

"""Ask the installed librdkafka which properties it knows, instead of keeping a copy of its
configuration table that goes stale with every release.

Two probes, both offline (no bootstrap.servers, nothing connects):

* `rd_kafka_conf_set` runs while confluent-kafka converts the config dict, *before* a client is
  created. Putting a property we know is unknown (the sentinel) after the probed key makes the
  conversion always fail: if it fails on the sentinel, the probed key and value were accepted.
  No client, thread or socket is ever created. Microseconds per key.
* Role (consumer-only / producer-only) is only checked by `rd_kafka_new`, which logs
  "Configuration property X is a consumer property and will be ignored by this producer
  instance". One short-lived producer and one consumer per batch of new keys reveal that;
  results are cached per key for the life of the process.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Mapping
from typing import Literal

from confluent_kafka import KafkaException

from kmirror.config.secret import MASK, is_secret_key
from kmirror.errors import ConfigError
from kmirror.kafka import clients

Scope = Literal["consumer", "producer", "any"]

_SENTINEL = "kmirror.probe.no-such-property"
_BAD_VALUE = "kmirror-probe-invalid"
# Keys the Python binding consumes itself (callbacks, loggers): never user configuration.
_BINDING_KEYS = frozenset(
    {
        "logger",
        "error_cb",
        "throttle_cb",
        "stats_cb",
        "oauth_cb",
        "on_delivery",
        "on_commit",
        "default.topic.config",
        "delivery.report.only.error",
    }
)
# Setting these has side effects even in a probe: plugin.library.paths dlopen()s, broker
# lists would make the probe clients connect. They are passed on as they are, unprobed.
_NO_PROBE = frozenset({"plugin.library.paths", "bootstrap.servers", "metadata.broker.list"})
# kmirror.sasl.*: kmirror's token provider settings (oauth.py), attached as oauth_cb.
_SECURITY = re.compile(
    r"^(security\.|ssl[._]|sasl\.|enable\.ssl\.|enable\.sasl\.|https\.|kmirror\.sasl\.)"
)
_ROLE_WARNING = re.compile(r"Configuration property (\S+) is a (consumer|producer) property")


def is_security_key(key: str) -> bool:
    """Transport and authentication settings: every client of a cluster needs the same."""
    return bool(_SECURITY.match(key))


def _conf_set(key: str, value: str) -> str | None:
    """Error message of rd_kafka_conf_set(key, value), or None when it was accepted."""
    try:
        clients.probe_producer({key: value, _SENTINEL: "x"})
    except KafkaException as exc:
        message = str(exc.args[0].str()) if exc.args else str(exc)
        return None if _SENTINEL in message else message
    except (TypeError, ValueError) as exc:  # the binding refused a non-callable callback etc.
        return str(exc)
    # Unreachable: the sentinel always fails. Kept so a future binding change is loud.
    raise AssertionError("librdkafka accepted the probe sentinel property")  # pragma: no cover


@functools.lru_cache(maxsize=1024)
def is_known(key: str) -> bool:
    """True when librdkafka has a property of this name (or alias)."""
    if key in _BINDING_KEYS or key.endswith("_cb"):
        return False
    if key in _NO_PROBE:
        return True
    message = _conf_set(key, "")
    if message is None:
        return True
    return "No such configuration property" not in message and "dedicated" not in message


@functools.lru_cache(maxsize=1024)
def canonical(key: str) -> str:
    """librdkafka's own name for an alias (linger.ms -> queue.buffering.max.ms). Typed
    properties name themselves when refusing a bad value; free-form strings cannot be
    told apart from their aliases this way and are returned unchanged."""
    if key in _NO_PROBE or not is_known(key):
        return key
    message = _conf_set(key, _BAD_VALUE) or ""
    names = [n for n in re.findall(r'"([^"]+)"', message) if n != _BAD_VALUE]
    return names[0] if names else key


def check_value(key: str, value: str, where: str) -> None:
    """Raise ConfigError when librdkafka refuses the value (never echoing a secret)."""
    if key in _NO_PROBE or key.startswith("kmirror."):  # kmirror's own keys: oauth.check()
        return
    message = _conf_set(key, value)
    if message is None:
        return
    raise ConfigError(
        f"{where}: invalid value {_show(key, value)} for '{key}': {_mask(key, value, message)}"
    )


def scopes(conf: Mapping[str, str]) -> dict[str, Scope]:
    """consumer / producer / any for each key (security and unprobed keys are 'any')."""
    todo = {
        k: v
        for k, v in conf.items()
        if k not in _scope_cache and k not in _NO_PROBE and not is_security_key(k)
    }
    if todo:
        _scope_cache.update(_probe_bisect(todo))
    return {k: _scope_cache.get(k, "any") for k in conf}


_scope_cache: dict[str, Scope] = {}


def _probe_bisect(conf: Mapping[str, str]) -> dict[str, Scope]:
    """Probe all keys in one pair of clients; when librdkafka refuses a combination (acks=1
    with idempotence, mixed assignor protocols ...) split in halves, so that only a key that
    is wrong on its own is reported, at a cost of a few extra clients."""
    try:
        return _probe_roles(conf)
    except KafkaException as exc:
        if len(conf) == 1:
            ((key, value),) = conf.items()
            message = str(exc.args[0].str()) if exc.args else str(exc)
            raise ConfigError(
                f"librdkafka refuses {key}={_show(key, value)}: {_mask(key, value, message)}"
            ) from exc
    items = list(conf.items())
    half = len(items) // 2
    return {**_probe_bisect(dict(items[:half])), **_probe_bisect(dict(items[half:]))}


class _Collector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _probe_roles(conf: Mapping[str, str]) -> dict[str, Scope]:
    # A private, unregistered logger: the probe's CONFWARN lines must not reach the app's log.
    collector = _Collector()
    logger = logging.Logger("kmirror.librdkafka-probe", logging.DEBUG)
    logger.addHandler(collector)
    producer = clients.probe_producer({**conf, "logger": logger})
    producer.poll(0)  # delivers the queued log lines to the logger
    del producer
    consumer_conf = {"group.id": "kmirror-scope-probe", **conf, "logger": logger}
    consumer = clients.probe_consumer(consumer_conf)
    consumer.poll(0)
    consumer.close()
    del consumer
    flagged: dict[str, Scope] = {}
    for message in collector.messages:
        match = _ROLE_WARNING.search(message)
        if match:
            flagged[match.group(1)] = "consumer" if match.group(2) == "consumer" else "producer"
    return {k: flagged.get(canonical(k), flagged.get(k, "any")) for k in conf}


def _show(key: str, value: str) -> str:
    return MASK if is_secret_key(key) else repr(value)


def _mask(key: str, value: str, message: str) -> str:
    return message.replace(value, MASK) if value and is_secret_key(key) else message

"""Java client properties -> librdkafka configuration, for one client role.

Order of decisions for each key: forbidden/security translation (javasec) -> explicit Java
renames -> keys librdkafka itself knows (probed, never a hard-coded table) -> Java-only keys
that mean nothing here (kept as notes) -> unknown (a note, like the Java clients' "supplied but
isn't a known config" warning). Nothing is dropped without a note; settings that would weaken
the delivery guarantee are overridden with a note saying why.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from kmirror.config import oauth
from kmirror.config.clients import CONSUMER_FORCED, PRODUCER_FORCED
from kmirror.config.javaclient import librdkafka
from kmirror.config.javaclient.javakeys import ASSIGNORS, JAVA_ONLY, RENAMES, START, StartPolicy
from kmirror.config.javaclient.javasec import translate_security
from kmirror.config.model import ConfValue
from kmirror.config.secret import seal
from kmirror.errors import ConfigError

TranslateRole = Literal["consumer", "producer", "admin", "common"]


@dataclass
class Translation:
    """librdkafka settings (sealed) split by the clients they apply to, plus notes."""

    common: dict[str, ConfValue] = field(default_factory=dict)
    consumer: dict[str, ConfValue] = field(default_factory=dict)
    producer: dict[str, ConfValue] = field(default_factory=dict)
    admin: dict[str, ConfValue] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    start_policy: StartPolicy | None = None  # the user's auto.offset.reset, if any
    bootstrap_servers: str | None = None
    group_id: str | None = None


def translate(
    props: Mapping[str, str],
    role: TranslateRole,
    where: str,
    *,
    security_to_common: bool = False,
) -> Translation:
    """Translate one set of Java properties. `where` prefixes every note and error
    ("consumer config consumer.properties"). With `security_to_common`, security keys go to
    `common` (MirrorMaker 1: the admin clients need the consumer's/producer's credentials)."""
    out = Translation()
    sec = translate_security(props)
    if sec.errors:
        raise ConfigError(f"{where}: " + "; ".join(sec.errors))
    out.notes += [f"{where}: {n}" for n in sec.notes]
    conf: dict[str, str] = dict(sec.conf)
    for key, value in props.items():
        if key not in sec.consumed:
            _translate_key(key, value, role, where, conf, out)
    for key, value in conf.items():
        librdkafka.check_value(key, value, where)
    _route(conf, role, where, out, security_to_common)
    for target in (out.common, out.consumer, out.producer, out.admin):
        _enforce(target, where, out.notes)
        target.update(seal({k: v for k, v in target.items() if isinstance(v, str)}))
    return out


def _translate_key(
    key: str, value: str, role: TranslateRole, where: str, conf: dict[str, str], out: Translation
) -> None:
    """One Java property: into `conf` (librdkafka's name and value), `out`, or a note."""
    word = "client" if role == "common" else role
    if key in ("bootstrap.servers", "metadata.broker.list"):  # the latter: librdkafka's
        out.bootstrap_servers = value.strip()
    elif key == "group.id":
        out.group_id = value.strip()
    elif key in RENAMES:
        new_key, convert = RENAMES[key]
        conf[new_key] = _convert(convert, key, value, where)
    elif key == "auto.offset.reset":
        _start_policy(value, role, where, out)
    elif key == "partition.assignment.strategy":
        conf[key] = _assignors(value, where, out.notes)
    elif key == "ssl.endpoint.identification.algorithm":
        conf[key] = value.strip().lower() or "none"  # Java's "" = do not verify host names
    elif key == "transactional.id":
        out.notes.append(
            f"{where}: transactional.id ignored: kmirror's producers are idempotent, and under "
            "--exactly-once each source partition has a transactional id of kmirror's own"
        )
    elif librdkafka.is_known(key) or oauth.is_provider_key(key):
        conf[key] = value
    elif key in JAVA_ONLY:
        out.notes.append(f"{where}: Java property '{key}' has no effect here: {JAVA_ONLY[key]}")
    else:
        out.notes.append(f"{where}: unknown {word} property '{key}' ignored{_hint(key)}")


def _start_policy(value: str, role: TranslateRole, where: str, out: Translation) -> None:
    policy = START.get(value.strip().lower())
    if policy is None:
        raise ConfigError(f"{where}: auto.offset.reset={value!r} must be earliest, latest or none")
    if role in ("consumer", "common"):
        out.start_policy = policy
    else:  # a producer or admin config ("common" takes the consumer's)
        out.notes.append(
            f"{where}: consumer property 'auto.offset.reset' in a {role} config ignored"
        )


def _convert(convert: Callable[[str], str] | None, key: str, value: str, where: str) -> str:
    try:
        return convert(value) if convert else value
    except ValueError as exc:
        raise ConfigError(f"{where}: {key}={value!r} is not a number") from exc


def _assignors(value: str, where: str, notes: list[str]) -> str:
    names: list[str] = []
    for item in (v.strip() for v in value.split(",")):
        short = item.rsplit(".", 1)[-1]
        if not item:
            continue
        if short not in ASSIGNORS:
            notes.append(
                f"{where}: partition assignor '{item}' is not available in librdkafka; ignored"
            )
            continue
        if short == "StickyAssignor":
            notes.append(
                f"{where}: StickyAssignor mapped to cooperative-sticky (librdkafka has "
                "no eager sticky assignor)"
            )
        names.append(ASSIGNORS[short])
    names = list(dict.fromkeys(names))
    if not names:
        raise ConfigError(
            f"{where}: partition.assignment.strategy={value!r} names no assignor "
            "librdkafka has: use range, roundrobin or cooperative-sticky"
        )
    # Java lists eager and cooperative assignors together for rolling upgrades; librdkafka
    # refuses the mix, so the first one's protocol decides (as the Java group would use it).
    cooperative = names[0] == "cooperative-sticky"
    kept = [n for n in names if (n == "cooperative-sticky") == cooperative]
    if kept != names:
        notes.append(
            f"{where}: partition.assignment.strategy: "
            f"{', '.join(n for n in names if n not in kept)} dropped (librdkafka "
            "cannot mix eager and cooperative assignors)"
        )
    return ",".join(kept)


def _route(
    conf: dict[str, str],
    role: TranslateRole,
    where: str,
    out: Translation,
    security_to_common: bool,
) -> None:
    scope = librdkafka.scopes(conf)
    word = "client" if role == "common" else role
    for key, value in conf.items():
        if librdkafka.is_security_key(key) and (security_to_common or role == "common"):
            out.common[key] = value
        elif role == "common":
            {"consumer": out.consumer, "producer": out.producer, "any": out.common}[scope[key]][
                key
            ] = value
        elif scope[key] == "any" or scope[key] == role:
            getattr(out, role)[key] = value
        else:
            out.notes.append(
                f"{where}: {scope[key]} property '{key}' has no effect on a {word}; ignored"
            )


def _enforce(conf: dict[str, ConfValue], where: str, notes: list[str]) -> None:
    """Drop or cap user settings the delivery guarantee depends on (model.py forces the
    values; this only makes each override visible)."""
    forced = {
        librdkafka.canonical(k): (k, v) for k, v in {**CONSUMER_FORCED, **PRODUCER_FORCED}.items()
    }
    for key in list(conf):
        value = str(conf[key]).strip().lower()
        name = librdkafka.canonical(key)
        if name in forced:
            forced_key, forced_value = forced[name]
            del conf[key]
            if value in ("all", "-1") and forced_key == "acks":
                continue
            if value != forced_value:
                notes.append(
                    f"{where}: {key}={value} overridden to {forced_key}={forced_value}: "
                    f"{_WHY[forced_key]}"
                )
        elif name == "max.in.flight.requests.per.connection" and value.isdigit() and int(value) > 5:
            conf[key] = "5"
            notes.append(
                f"{where}: {key}={value} capped at 5: the idempotent producer keeps "
                "per-partition order only with at most 5 requests in flight"
            )
        elif name == "message.send.max.retries" and value == "0":
            del conf[key]
            notes.append(
                f"{where}: {key}=0 overridden: without retries a transient broker "
                "error would fail the send (librdkafka retries until message.timeout.ms)"
            )


_WHY = {
    "enable.auto.commit": "kmirror commits offsets itself, only for records the target "
    "acknowledged; auto-commit could commit records that were never copied",
    "enable.auto.offset.store": "offsets are stored only for records the target acknowledged",
    "auto.offset.reset": "a committed offset that no longer exists must stop the mirror, not "
    "silently skip records",
    "enable.partition.eof": "the mirror does not use end-of-partition events",
    "enable.idempotence": "idempotence keeps per-partition order and prevents duplicates when "
    "librdkafka retries",
    "acks": "with fewer acknowledgements a record the leader accepted can be lost in a failover",
}


def _hint(key: str) -> str:
    # MirrorMaker 1 users sometimes prefix keys the way mm2.properties does.
    for prefix in ("consumer.", "producer.", "admin."):
        rest = key[len(prefix) :]
        if key.startswith(prefix) and (librdkafka.is_known(rest) or rest in JAVA_ONLY):
            return f" (client properties files take plain keys: did you mean '{rest}'?)"
    return ""

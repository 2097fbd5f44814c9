"""Throttle settings: how fast a mirror may copy, per flow and per topic, with separate limits
for the backlog (partitions catching up) and the tail (partitions that keep up with live
records), so a catch-up cannot starve the source and live records are not held behind it.

One text form serves every way in (the `--throttle` flag, KMIRROR_THROTTLE, mm2's
`kmirror.throttle`, the chart's `throttle` value), and one JSON form the control API and the
control topic:

    backlog.bytes=10485760,tail.records=20000,orders:backlog.bytes=1048576

A term is `[TOPIC:]CLASS.UNIT=N`: CLASS `backlog` or `tail`, UNIT `bytes` or `records` (per
second), N a positive number; without TOPIC it limits the whole flow. How the limits are
enforced (token buckets, shared among a replica's streams): kmirror.control.throttle.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from kmirror.errors import ConfigError

Kind = Literal["backlog", "tail"]
KINDS: tuple[Kind, ...] = ("backlog", "tail")
_UNITS = {"bytes": "bytes_per_s", "records": "records_per_s"}
_TERM = re.compile(r"(?:(?P<topic>[^:=,\s]+):)?(?P<kind>[a-z]+)\.(?P<unit>[a-z]+)=(?P<n>\S+)")
_HOW = (
    "write terms like backlog.bytes=10485760 or orders:tail.records=5000, comma-separated "
    "([TOPIC:]backlog|tail.bytes|records=N, N per second)"
)


@dataclass(frozen=True)
class Rate:
    """Limits of one class (None: no limit)."""

    bytes_per_s: float | None = None
    records_per_s: float | None = None

    @property
    def limited(self) -> bool:
        return self.bytes_per_s is not None or self.records_per_s is not None


@dataclass(frozen=True)
class Rates:
    """The backlog and the tail limits of one scope (the flow, or one topic)."""

    backlog: Rate = field(default_factory=Rate)
    tail: Rate = field(default_factory=Rate)

    def of(self, kind: Kind) -> Rate:
        return self.backlog if kind == "backlog" else self.tail

    @property
    def limited(self) -> bool:
        return self.backlog.limited or self.tail.limited


@dataclass(frozen=True)
class ThrottleSettings:
    flow: Rates = field(default_factory=Rates)
    # Per source topic (exact names), sorted: the settings compare and hash as values.
    topics: tuple[tuple[str, Rates], ...] = ()

    @property
    def limited(self) -> bool:
        return self.flow.limited or any(r.limited for _, r in self.topics)

    def topic(self, name: str) -> Rates | None:
        return dict(self.topics).get(name)

    def spec(self) -> str:
        """The text form (parse_throttle reads it back)."""
        terms = _terms("", self.flow)
        for topic, rates in self.topics:
            terms += _terms(f"{topic}:", rates)
        return ",".join(terms)

    def to_json(self) -> dict[str, Any]:
        return {
            "flow": _rates_json(self.flow),
            "topics": {t: _rates_json(r) for t, r in self.topics},
        }


def _terms(prefix: str, rates: Rates) -> list[str]:
    out = []
    for kind in KINDS:
        rate = rates.of(kind)
        for unit, attr in _UNITS.items():
            value = getattr(rate, attr)
            if value is not None:
                text = str(int(value)) if float(value).is_integer() else repr(value)
                out.append(f"{prefix}{kind}.{unit}={text}")
    return out


def _rates_json(rates: Rates) -> dict[str, dict[str, float | None]]:
    return {
        kind: {attr: getattr(rates.of(kind), attr) for attr in _UNITS.values()} for kind in KINDS
    }


def _number(text: object, where: str) -> float:
    try:
        value = float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: {text!r} is not a number; {_HOW}") from None
    if not value > 0 or value == float("inf"):
        raise ConfigError(f"{where}: a limit must be a positive number, not {text!r}; {_HOW}")
    return value


def parse_throttle(text: str, name: str) -> ThrottleSettings:
    """The text form; `name` (a flag, a key, a variable) is named in errors."""
    flow = Rates()
    topics: dict[str, Rates] = {}
    for raw in (t.strip() for t in text.split(",")):
        if not raw:
            continue
        m = _TERM.fullmatch(raw)
        if m is None or m["kind"] not in KINDS or m["unit"] not in _UNITS:
            raise ConfigError(f"{name}: cannot read {raw!r}; {_HOW}")
        value = _number(m["n"], f"{name} {raw!r}")
        topic = m["topic"]
        rates = topics.get(topic, Rates()) if topic else flow
        rate = replace(rates.of(m["kind"]), **{_UNITS[m["unit"]]: value})
        rates = replace(rates, **{m["kind"]: rate})
        if topic:
            topics[topic] = rates
        else:
            flow = rates
    return ThrottleSettings(flow, tuple(sorted(topics.items())))


def throttle_from_json(doc: object, name: str = "throttle") -> ThrottleSettings:
    """The JSON form (the control API's PUT /throttle, the control topic); a missing part is no
    limit."""
    if not isinstance(doc, Mapping):
        raise ConfigError(f"{name}: expected an object with 'flow' and 'topics'")
    unknown = set(doc) - {"flow", "topics"}
    if unknown:
        raise ConfigError(f"{name}: unknown field(s) {sorted(unknown)}: use 'flow' and 'topics'")
    topics = doc.get("topics") or {}
    if not isinstance(topics, Mapping):
        raise ConfigError(f"{name}.topics: expected an object of topic -> limits")
    return ThrottleSettings(
        _rates_from(doc.get("flow") or {}, f"{name}.flow"),
        tuple(sorted((str(t), _rates_from(r, f"{name}.topics.{t}")) for t, r in topics.items())),
    )


def _rates_from(doc: object, where: str) -> Rates:
    if not isinstance(doc, Mapping) or set(doc) - set(KINDS):
        raise ConfigError(f"{where}: expected an object with 'backlog' and/or 'tail'")
    kinds: dict[str, Rate] = {}
    for kind in KINDS:
        part = doc.get(kind) or {}
        if not isinstance(part, Mapping) or set(part) - set(_UNITS.values()):
            raise ConfigError(
                f"{where}.{kind}: expected an object with bytes_per_s and/or records_per_s"
            )
        kinds[kind] = Rate(
            **{
                attr: None if part.get(attr) is None else _number(part[attr], f"{where}.{kind}")
                for attr in _UNITS.values()
            }
        )
    return Rates(**kinds)

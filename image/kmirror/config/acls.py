"""ACL sync settings (docs/migrations.md): which ACLs of the source follow the mirrored topics
to the target, as whom, and whether the copies are read-only there.

Two scopes. `mm2` is MirrorMaker 2's own (MirrorSourceConnector.syncTopicAcls): LITERAL topic
ACLs of mirrored topics, renamed like the topics, ALLOW WRITE never copied, ALLOW ALL copied as
ALLOW READ. `full` is kmirror's: LITERAL and PREFIXED topic ACLs (WRITE and ALL too), consumer
group ACLs and transactional-ID ACLs, so that the consumers and producers that move can do on
the target what they did on the source. Both only ever add ACLs; nothing on the target is
deleted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from kmirror.errors import ConfigError

SCOPES = ("mm2", "full")
DEFAULT_INTERVAL_S = 600.0  # MM2's sync.topic.acls.interval.seconds
# A Kafka principal: `Type:name` (User:alice, User:CN=alice,O=acme, Group:ops), or `User:*`.
_PRINCIPAL = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*:\S(.*\S)?")
_HOW_MAP = (
    "write FROM -> TO pairs separated by ';', each a Kafka principal Type:name, e.g. "
    "'User:alice@A -> User:alice; User:CN=bob,O=A -> User:bob'"
)


def check_principal(principal: str, where: str) -> str:
    if not _PRINCIPAL.fullmatch(principal):
        raise ConfigError(
            f"{where}: {principal!r} is not a Kafka principal: write Type:name, e.g. "
            "User:alice (SASL user alice) or User:CN=alice,O=acme (a certificate's name)"
        )
    return principal


def parse_principal_map(text: str, where: str) -> tuple[tuple[str, str], ...]:
    """`User:alice@A -> User:alice; ...` (';' or newlines between entries: certificate names
    hold commas)."""
    out: list[tuple[str, str]] = []
    for raw in re.split(r"[;\n]", text):
        entry = raw.strip()
        if not entry:
            continue
        source, sep, target = entry.partition("->")
        if not sep or not source.strip() or not target.strip():
            raise ConfigError(f"{where}: malformed principal map entry {entry!r}: {_HOW_MAP}")
        out.append((check_principal(source.strip(), where), check_principal(target.strip(), where)))
    sources = [s for s, _ in out]
    twice = sorted({s for s in sources if sources.count(s) > 1})
    if twice:
        raise ConfigError(f"{where}: the principal map names {', '.join(twice)} twice")
    return tuple(out)


@dataclass(frozen=True)
class AclSyncConfig:
    enabled: bool = False
    interval_s: float = DEFAULT_INTERVAL_S
    scope: Literal["mm2", "full"] = "mm2"
    # Source principal -> target principal; a principal not named keeps its name.
    principals: tuple[tuple[str, str], ...] = ()
    # Read-only mirror topics: DENY WRITE on each mirrored target topic for every principal the
    # target's ACLs let write it, except the mirror's own (Cluster Linking's mirror topics).
    deny_write: bool = False
    # The mirror's principal on the target (exempt from deny_write); default: User:<the
    # target's SASL user name>.
    mirror_principal: str = ""
    # Asked for (a key, flag or variable said so): a target that cannot take ACLs stops the
    # start. Otherwise (MM2's default, on without being asked) it is a warning, as in MM2.
    explicit: bool = False

    def __post_init__(self) -> None:
        if self.interval_s <= 0:
            raise ConfigError(
                f"sync.topic.acls.interval.seconds must be > 0, not {self.interval_s}"
            )
        if self.scope not in SCOPES:
            raise ConfigError(f"the ACL sync scope must be mm2 or full, not {self.scope!r}")
        if self.mirror_principal:
            check_principal(self.mirror_principal, "the mirror's principal")

    def target_principal(self, principal: str) -> str:
        return dict(self.principals).get(principal, principal)

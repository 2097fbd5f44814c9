"""What ACL sync adds to the target, from the source's ACLs, the target's and the mirror's
configuration. Pure: no broker here (kmirror.kafka.acls lists and creates), so the dry-run diff
of `kmirror check` and what a sync then creates are one computation.

Additive only: the plan lists bindings to create, never one to delete; a target-only ACL stays
whatever the source has. Topic names go through the mirror's one mapping (RenamePolicy), a
PREFIXED topic ACL through the policy's prefix when every mirrored topic it covers keeps its
place under it, else as one LITERAL ACL per covered target topic (a topic map or a rule moved
them). Principals go through the principal map.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from kmirror.config.model import MirrorConfig
from kmirror.kafka.acls import Binding

WRITERS = ("WRITE", "ALL")


@dataclass(frozen=True)
class Skipped:
    binding: Binding  # as on the source
    why: str


@dataclass(frozen=True)
class AclPlan:
    create: tuple[Binding, ...]  # bindings the target lacks, in the order they are created
    skipped: tuple[Skipped, ...]  # source bindings not copied, with the reason
    wanted: int  # target bindings the source's ACLs call for (present or not)

    @property
    def missing(self) -> int:
        """The drift: bindings the target should have and has not."""
        return len(self.create)


def plan(
    config: MirrorConfig,
    source: Iterable[Binding],
    target: Iterable[Binding],
    source_topics: Iterable[str],
    mirror_principal: str = "",
) -> AclPlan:
    topics = config.topics.select(set(source_topics))
    wanted: set[Binding] = set()
    skipped: list[Skipped] = []
    for binding in sorted(source):
        copies, why = _copies(config, binding, topics)
        wanted |= copies
        if why:
            skipped.append(Skipped(binding, why))
    have = set(target)
    create = sorted(wanted - have)
    if config.acls.deny_write:
        denies, refused = _read_only(config, have | wanted, topics, mirror_principal)
        create += sorted(denies - have - set(create))
        skipped += refused
    return AclPlan(tuple(create), tuple(skipped), len(wanted))


def _copies(config: MirrorConfig, b: Binding, topics: list[str]) -> tuple[set[Binding], str]:
    """The target bindings one source binding becomes, or why none."""
    entry = replace(b, principal=config.acls.target_principal(b.principal))
    why = _not_copied(config, b, topics)
    if why:
        return set(), why
    if b.resource != "TOPIC":
        return {entry}, ""
    if b.pattern == "PREFIXED":
        return _prefixed(config, entry, [t for t in topics if t.startswith(b.name)])
    if config.acls.scope == "mm2" and b.permission == "ALLOW" and b.operation == "ALL":
        entry = replace(entry, operation="READ")  # MM2 downgrades ALLOW ALL to READ
    return {replace(entry, name=config.target_topic(b.name))}, ""


def _not_copied(config: MirrorConfig, b: Binding, topics: list[str]) -> str:
    """Why a source binding has no copy on the target ("" when it has)."""
    mm2 = config.acls.scope == "mm2"
    if b.resource != "TOPIC":
        return "MM2's scope copies topic ACLs only (kmirror.acls.scope=full: all)" if mm2 else ""
    if b.pattern == "PREFIXED":
        return "MM2's scope copies LITERAL topic ACLs only" if mm2 else ""
    if b.name == "*":
        return "a wildcard topic ACL would grant every topic of the target, mirrored or not"
    if b.name not in topics:
        return "its topic is not mirrored"
    if mm2 and b.permission == "ALLOW" and b.operation == "WRITE":
        return "MM2's scope never copies ALLOW WRITE (kmirror.acls.scope=full does)"
    return ""


def _prefixed(config: MirrorConfig, b: Binding, covered: list[str]) -> tuple[set[Binding], str]:
    if not covered:
        return set(), "no mirrored topic starts with its prefix"
    prefix = config.rename.prefixed(b.name)
    if all(config.target_topic(t) == prefix + t[len(b.name) :] for t in covered):
        return {replace(b, name=prefix)}, ""
    # Renamed out from under the prefix: the covered topics one by one (a later topic under
    # the prefix gets its own at the next sync).
    return {replace(b, name=config.target_topic(t), pattern="LITERAL") for t in covered}, ""


def _read_only(
    config: MirrorConfig, after: set[Binding], topics: list[str], mirror: str
) -> tuple[set[Binding], list[Skipped]]:
    """DENY WRITE on each mirrored target topic for every principal an ALLOW lets write it,
    the mirror's own excepted: DENY wins over ALLOW, so only the mirror writes there."""
    denies: set[Binding] = set()
    refused: list[Skipped] = []
    for topic in (config.target_topic(t) for t in topics):
        for b in sorted(after):
            if b.permission != "ALLOW" or b.operation not in WRITERS or b.principal == mirror:
                continue
            if not _covers(b, topic):
                continue
            if b.principal.endswith(":*"):
                why = f"{topic} stays writable: a DENY for {b.principal} would stop the mirror too"
                refused.append(Skipped(b, why + "; narrow the ALLOW"))
                continue
            denies.add(Binding("TOPIC", topic, "LITERAL", b.principal, "*", "WRITE", "DENY"))
    return denies, refused


def _covers(b: Binding, topic: str) -> bool:
    if b.resource != "TOPIC":
        return False
    if b.pattern == "PREFIXED":
        return topic.startswith(b.name)
    return b.name in (topic, "*")

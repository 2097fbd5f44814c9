"""Classify one partition's unmatched records (pure Python; runs on the executors)."""

from __future__ import annotations

from collections.abc import Iterable

from kmirror_validate.compare.kinds import DIFFERS, EXTRA, FIELDS, MISSING, PAIRINGS, PENDING

# Plain tuples on the executors: source (offset, partition, post, k1, vh, hh, ts), target
# (offset, partition, k1, vh, hh, ts); a problem: (kind, source offset, source partition,
# target offset, target partition, fields).
SourceRec = tuple[int, int, bool, int, int, int, int]
TargetRec = tuple[int, int, int, int, int, int]
Problem = tuple[str, int | None, int | None, int | None, int | None, list[str]]
_S_FIELDS = {"k1": 3, "vh": 4, "hh": 5, "ts": 6}
_T_FIELDS = {"k1": 2, "vh": 3, "hh": 4, "ts": 5}


def pair_records(source: Iterable[SourceRec], target: Iterable[TargetRec]) -> list[Problem]:
    """Classify one partition's unmatched records (those that lost their digest twin).

    A source and a target record are the same record, damaged, when they agree on the
    fields of one of PAIRINGS; the passes run in order, and within equal keys the i-th
    source record (by offset) pairs with the i-th target record. Pairs become `differs`
    (listing the fields that differ); unpaired source records are `missing` (`pending` when
    newer than the snapshot), unpaired target records `extra`.
    """
    s_left = sorted(source)
    t_left = sorted(target)
    out: list[Problem] = []
    for keys in PAIRINGS:
        if not s_left or not t_left:
            break
        queues: dict[tuple[int, ...], list[TargetRec]] = {}
        for t in reversed(t_left):  # reversed + pop(): offset order
            queues.setdefault(tuple(t[_T_FIELDS[k]] for k in keys), []).append(t)
        still: list[SourceRec] = []
        used: set[tuple[int, int]] = set()
        for s in s_left:
            q = queues.get(tuple(s[_S_FIELDS[k]] for k in keys))
            if not q:
                still.append(s)
                continue
            t = q.pop()
            used.add((t[1], t[0]))
            fields = [n for n, c in FIELDS if s[_S_FIELDS[c]] != t[_T_FIELDS[c]]]
            out.append((DIFFERS.name, s[0], s[1], t[0], t[1], fields))
        s_left = still
        t_left = [t for t in t_left if (t[1], t[0]) not in used]
    out += [((PENDING if s[2] else MISSING).name, s[0], s[1], None, None, []) for s in s_left]
    out += [(EXTRA.name, None, None, t[0], t[1], []) for t in t_left]
    return out

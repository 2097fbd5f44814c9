"""Which matched records break the source order (pure Python; runs on the executors)."""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence


def order_violators(source_offsets_in_target_order: Sequence[int]) -> list[int]:
    """The fewest records to take out so that the rest keep source order: everything not on
    one longest increasing subsequence (patience sorting, O(n log n)). Returned as source
    offsets, ascending. Of equally long subsequences the one ending in the smallest
    offsets is kept, so of two swapped neighbours the one that comes first on the target
    is reported."""
    seq = list(source_offsets_in_target_order)
    tails: list[int] = []  # tails[k]: smallest tail value of an increasing run of length k+1
    tail_idx: list[int] = []
    parent = [-1] * len(seq)
    for i, x in enumerate(seq):
        k = bisect.bisect_left(tails, x)
        if k == len(tails):
            tails.append(x)
            tail_idx.append(i)
        else:
            tails[k] = x
            tail_idx[k] = i
        parent[i] = tail_idx[k - 1] if k > 0 else -1
    keep: set[int] = set()
    i = tail_idx[-1] if tail_idx else -1
    while i >= 0:
        keep.add(i)
        i = parent[i]
    return sorted(x for j, x in enumerate(seq) if j not in keep)


def violations_of(
    group: tuple[tuple[str, int], Iterable[tuple[int, int]]], max_examples: int
) -> tuple[str, int, int, list[int]]:
    """One partition's (target offset, source offset) pairs -> (topic, partition, number of
    violations, the first max_examples violating source offsets)."""
    (topic, partition), pairs = group
    bad = order_violators([s for _, s in sorted(pairs)])
    return topic, partition, len(bad), bad[:max_examples]

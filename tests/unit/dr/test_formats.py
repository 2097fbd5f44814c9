"""MM2's checkpoint and heartbeat records, byte for byte (Java's reading: tests/integration/dr)."""

from __future__ import annotations

import pytest

from kmirror.dr.formats import Checkpoint, Heartbeat
from kmirror.errors import MirrorError

pytestmark = pytest.mark.unit


def test_checkpoint_fixed_bytes() -> None:
    cp = Checkpoint("g1", "A.orders", 3, upstream_offset=42, downstream_offset=40, metadata="m")
    assert cp.key() == b"\x00\x02g1" + b"\x00\x08A.orders" + b"\x00\x00\x00\x03"
    assert cp.value() == (
        b"\x00\x00"  # version 0
        + b"\x00\x00\x00\x00\x00\x00\x00\x2a"
        + b"\x00\x00\x00\x00\x00\x00\x00\x28"
        + b"\x00\x01m"
    )
    assert Checkpoint.decode(cp.key(), cp.value()) == cp


def test_heartbeat_fixed_bytes() -> None:
    hb = Heartbeat("A", "B", 1_700_000_000_123)
    assert hb.key() == b"\x00\x01A\x00\x01B"
    assert hb.value() == b"\x00\x00" + (1_700_000_000_123).to_bytes(8, "big")
    assert Heartbeat.decode(hb.key(), hb.value()) == hb


def test_round_trip_unicode_and_large_offsets() -> None:
    cp = Checkpoint("grüppe", "t", 0, 2**62, 0, "")
    assert Checkpoint.decode(cp.key(), cp.value()) == cp


@pytest.mark.parametrize(
    ("key", "value", "why"),
    [
        (b"\x00\x02g1", b"", "truncated"),
        (Checkpoint("g", "t", 0, 1, 1).key(), b"\x00\x01" + b"\x00" * 18, "version 1"),
        (Checkpoint("g", "t", 0, 1, 1).key() + b"x", Checkpoint("g", "t", 0, 1, 1).value(),
         "trailing"),
    ],
)  # fmt: skip
def test_foreign_bytes_are_a_clear_error(key: bytes, value: bytes, why: str) -> None:
    with pytest.raises(MirrorError, match=f"unreadable MM2 checkpoint.*{why}"):
        Checkpoint.decode(key, value)

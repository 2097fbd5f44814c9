"""The opt-in provenance header (kmirror.mirror.provenance)."""

from __future__ import annotations

import pytest

from kmirror.mirror.provenance import HEADER, stamp

pytestmark = pytest.mark.unit


def test_provenance_header_stamps_keeps_origin_and_skips_loops() -> None:
    assert stamp(None, b"A", b"B") == [(HEADER, b"A")]
    assert stamp([("h", b"1")], b"A", b"B") == [("h", b"1"), (HEADER, b"A")]
    hopped = [("h", None), (HEADER, b"C")]
    assert stamp(hopped, b"A", b"B") == hopped  # the first origin survives every hop
    assert stamp([(HEADER, b"B")], b"A", b"B") is None  # came from the target: not copied

"""The schema-ID rewrite of one key or value, and subject names under the rename policy."""

from __future__ import annotations

import pytest

from kmirror.config.model import RenamePolicy
from kmirror.schemas.sync import target_subject
from kmirror.schemas.wire import UnmappedIdError, rewrite, schema_id

pytestmark = pytest.mark.unit

IDS = {7: 1001, 8: 8, 300: 70000}


def wire(sid: int, payload: bytes) -> bytes:
    return b"\x00" + sid.to_bytes(4, "big") + payload


def test_the_id_is_replaced_and_the_payload_kept_byte_for_byte() -> None:
    payload = bytes(range(256)) * 3
    out = rewrite(wire(7, payload), IDS)
    assert out == wire(1001, payload)
    assert len(out or b"") == len(wire(7, payload))  # same length: batches keep their size
    assert rewrite(wire(300, b""), IDS) == wire(70000, b"")  # a header with an empty payload


def test_an_id_mapped_to_itself_returns_the_same_bytes() -> None:
    data = wire(8, b"abc")
    assert rewrite(data, IDS) is data


@pytest.mark.parametrize(
    "data",
    [None, b"", b"\x00\x00\x00\x07", b"plain text", b"\x01\x00\x00\x00\x07abc", b'{"a":1}'],
)
def test_anything_not_in_the_wire_format_passes_unchanged(data: bytes | None) -> None:
    assert schema_id(data) is None
    assert rewrite(data, IDS) is data


def test_an_unmapped_id_is_raised_with_the_id() -> None:
    with pytest.raises(UnmappedIdError) as caught:
        rewrite(wire(99, b"x"), IDS)
    assert caught.value.schema_id == 99
    assert schema_id(wire(2**32 - 1, b"")) == 2**32 - 1


@pytest.mark.parametrize(
    ("subject", "identity", "prefix"),
    [
        ("orders-value", "orders-value", "A.orders-value"),
        ("orders-key", "orders-key", "A.orders-key"),
        ("com.acme.Order", "com.acme.Order", "com.acme.Order"),  # RecordNameStrategy
        ("-value", "-value", "-value"),
    ],
)
def test_topic_name_strategy_subjects_follow_the_rename(
    subject: str, identity: str, prefix: str
) -> None:
    assert target_subject(subject, RenamePolicy().target_topic) == identity
    policy = RenamePolicy(kind="prefix", source_alias="A")
    assert target_subject(subject, policy.target_topic) == prefix

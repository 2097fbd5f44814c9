"""The Confluent wire format of one key or value: magic byte 0, a 4-byte big-endian schema ID,
then the serialized payload. Rewriting the ID keeps the length, so a batch that carries the
record keeps its size (the batch path's rewrite only recomputes its CRC).

Pure functions, no registry: the ID map is handed in as a plain `Mapping[int, int]`, the same
shape the batch path's kernel takes.
"""

from __future__ import annotations

from collections.abc import Mapping

MAGIC = 0
HEADER_SIZE = 5  # magic byte + schema ID


class UnmappedIdError(LookupError):
    """The value names a schema ID the map does not (yet) hold."""

    def __init__(self, schema_id: int) -> None:
        super().__init__(schema_id)
        self.schema_id = schema_id


def schema_id(data: bytes | None) -> int | None:
    """The schema ID of a wire-format key or value; None for null and anything else (shorter
    than the header, or a first byte that is not the magic byte)."""
    if data is None or len(data) < HEADER_SIZE or data[0] != MAGIC:
        return None
    return int.from_bytes(data[1:HEADER_SIZE], "big")


def rewrite(data: bytes | None, ids: Mapping[int, int]) -> bytes | None:
    """`data` with its schema ID replaced by ids[its ID]; anything not in the wire format is
    returned as it is. Raises UnmappedIdError when the ID has no entry (the caller resolves it
    and asks again: a record never leaves with an ID the target does not know)."""
    sid = schema_id(data)
    if sid is None:
        return data
    assert data is not None  # schema_id() said so
    target = ids.get(sid)
    if target is None:
        raise UnmappedIdError(sid)
    if target == sid:
        return data
    return b"\x00" + target.to_bytes(4, "big") + data[HEADER_SIZE:]

"""Workload values in the Confluent wire format, for the schema-ID `translate` measurement.

A framed value is a valid Avro record of SCHEMA (one `bytes` field) behind the wire-format header
(magic byte 0, the 4-byte schema ID), and exactly as long as the unframed value it replaces: the
workload's sizes, and so its MB/s, stay what they were. The mirror's rewrite reads only the
header (native/kmirror-batches/src/ids.rs), but a valid payload lets the harness check that a
copied record deserializes on the target with the target registry (scripts/bench/registries.py).
"""

from __future__ import annotations

import json

from kmirror.schemas.wire import HEADER_SIZE, MAGIC

SCHEMA = json.dumps(
    {
        "type": "record",
        "name": "BenchValue",
        "namespace": "kmirror.bench",
        "fields": [{"name": "payload", "type": "bytes"}],
    }
)


def _long(n: int) -> bytes:
    """Avro's long: zigzag, then a base-128 varint (low groups first)."""
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append(z & 0x7F | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def frame(schema_id: int, value: bytes) -> bytes:
    """`value` as a BenchValue record in the wire format, of the same length: the payload is
    the head of `value`, as long as the header and the length prefix leave room for. A length
    the Avro encoding cannot hit exactly (a body of 65 bytes: the prefix grows from 1 to 2 bytes
    there) gives a value one byte shorter."""
    body = len(value) - HEADER_SIZE
    if body < 1:
        raise ValueError(f"a {len(value)}-byte value has no room for the wire-format header")
    n = body - 1
    while n + len(_long(n)) > body:
        n -= 1
    header = bytes([MAGIC]) + schema_id.to_bytes(4, "big")
    return header + _long(n) + value[:n]

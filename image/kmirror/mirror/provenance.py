"""The opt-in provenance header: which cluster a record was first written to.

With the identity policy topic names carry no origin, so two mirrors running A->B and B->A on
the same topic would copy every record back and forth. With `provenance.header.enabled` each
copy carries ``kmirror.origin: <alias of the cluster the record was first written to>`` (an
existing header is kept, so a record's origin survives any number of hops), and a mirror never
copies a record whose origin is the cluster it writes to. Off by default: the header is a byte
the source record did not have, and the default mirror is byte-exact.
"""

from __future__ import annotations

from typing import Any

HEADER = "kmirror.origin"
# What confluent-kafka's Message.headers() returns and Producer.produce() takes.
Headers = Any


def stamp(headers: Headers, source_alias: bytes, target_alias: bytes) -> Headers:
    """The headers to copy with, or None when the record came from the target (skip it)."""
    if headers:
        for name, value in headers:
            if name == HEADER:
                return None if value == target_alias else headers
        return [*headers, (HEADER, source_alias)]
    return [(HEADER, source_alias)]

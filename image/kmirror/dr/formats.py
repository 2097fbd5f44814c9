"""MirrorMaker 2's record formats, byte for byte, so MM2 tooling reads what kmirror writes.

MM2 serializes its checkpoint and heartbeat records with Kafka's protocol `Struct` schemas
(connect-mirror-client `Checkpoint` and `Heartbeat`): a value is a header struct holding the
int16 version, then the version's value struct. Types: INT16/INT32/INT64 are big-endian, a
STRING is an int16 byte length then UTF-8. Version 0 is the only version MM2 has written:

* checkpoint key   ``group: STRING, topic: STRING, partition: INT32``
* checkpoint value ``version: INT16, upstreamOffset: INT64, offset: INT64, metadata: STRING``
* heartbeat key    ``sourceClusterAlias: STRING, targetClusterAlias: STRING``
* heartbeat value  ``version: INT16, timestamp: INT64``

The checkpoint's topic is the *target* topic (MM2 renames it through the replication policy),
``upstreamOffset`` the group's committed offset on the source and ``offset`` where the group
resumes on the target.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kmirror.errors import MirrorError

VERSION = 0
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


@dataclass(frozen=True, slots=True)
class Checkpoint:
    group: str
    topic: str  # the target topic
    partition: int
    upstream_offset: int  # the group's committed offset on the source
    downstream_offset: int  # where the group resumes on the target
    metadata: str = ""

    def key(self) -> bytes:
        return _string(self.group) + _string(self.topic) + _I32.pack(self.partition)

    def value(self) -> bytes:
        return (
            _I16.pack(VERSION)
            + _I64.pack(self.upstream_offset)
            + _I64.pack(self.downstream_offset)
            + _string(self.metadata)
        )

    @classmethod
    def decode(cls, key: bytes, value: bytes) -> Checkpoint:
        r = _Reader(key, "checkpoint key")
        group, topic, partition = r.string(), r.string(), r.int32()
        r.end()
        v = _Reader(value, "checkpoint value")
        v.version()
        upstream, downstream, metadata = v.int64(), v.int64(), v.string()
        v.end()
        return cls(group, topic, partition, upstream, downstream, metadata)


@dataclass(frozen=True, slots=True)
class Heartbeat:
    source_alias: str
    target_alias: str
    timestamp_ms: int

    def key(self) -> bytes:
        return _string(self.source_alias) + _string(self.target_alias)

    def value(self) -> bytes:
        return _I16.pack(VERSION) + _I64.pack(self.timestamp_ms)

    @classmethod
    def decode(cls, key: bytes, value: bytes) -> Heartbeat:
        r = _Reader(key, "heartbeat key")
        source, target = r.string(), r.string()
        r.end()
        v = _Reader(value, "heartbeat value")
        v.version()
        timestamp = v.int64()
        v.end()
        return cls(source, target, timestamp)


def _string(text: str) -> bytes:
    data = text.encode("utf-8")
    if len(data) > 0x7FFF:
        raise MirrorError(f"string of {len(data)} bytes does not fit MM2's STRING type")
    return _I16.pack(len(data)) + data


class _Reader:
    def __init__(self, data: bytes, what: str) -> None:
        self._data, self._pos, self._what = data, 0, what

    def _take(self, n: int) -> bytes:
        if n < 0 or self._pos + n > len(self._data):
            raise self._bad(f"truncated at byte {self._pos}")
        chunk = self._data[self._pos : self._pos + n]
        self._pos += n
        return chunk

    def _bad(self, why: str) -> MirrorError:
        return MirrorError(
            f"unreadable MM2 {self._what} ({why}): the topic holds records of another format; "
            "point kmirror at MM2's checkpoints/heartbeats topics only"
        )

    def int32(self) -> int:
        return int(_I32.unpack(self._take(4))[0])

    def int64(self) -> int:
        return int(_I64.unpack(self._take(8))[0])

    def string(self) -> str:
        n = int(_I16.unpack(self._take(2))[0])
        try:
            return self._take(n).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self._bad("not UTF-8") from exc

    def version(self) -> None:
        version = int(_I16.unpack(self._take(2))[0])
        # MM2 reads newer versions with the schema of that version; there is only version 0.
        if version != VERSION:
            raise self._bad(f"version {version}, kmirror knows version {VERSION}")

    def end(self) -> None:
        if self._pos != len(self._data):
            raise self._bad(f"{len(self._data) - self._pos} trailing bytes")

"""CPU per record of the candidates for merging small source batches (issue 21, item 1).

    nice -n 10 .venv/bin/python -m scripts.bench.rebatch [--batches 20000] [--reps 5]

Workload (docs/architecture.md, "Re-batching"): 20,000 source batches of 5 records each, one
16-byte key, one header, 100 B values (and 1 KB values), uncompressed and lz4, laid back to back
in one buffer as a fetch returns them, cut into runs of at most RUN_BYTES of input each (the
target's batch size). Every candidate merges the same runs into one batch per run:

- ``python``: a pure-Python loop over the records (varints by hand, bytes sliced, not decoded);
- ``kafka-python``: kafka-python's own (pure-Python) DefaultRecordBatch reader and builder
  (uncompressed only: its lz4 needs the ``lz4`` package, which kmirror does not install);
- ``aiokafka``: aiokafka's Cython DefaultRecordBatch reader and builder (codecs: cramjam);
- ``native``: kmirror_batches.merge (native/kmirror-batches, Rust), one call per run.

``ids`` cases translate the schema ID of every value (Confluent wire format). CPU time is
``time.process_time`` around the merge loop alone; the best of ``--reps`` repetitions is
reported (the least disturbed by the other jobs on the machine), with the load average.
Each candidate's output of the first run is decoded and checked equal to the native one's.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import struct
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import cramjam
import crc32c
import kmirror_batches
from aiokafka.record.default_records import DefaultRecordBatch as AioReader
from aiokafka.record.default_records import DefaultRecordBatchBuilder as AioBuilder
from kafka.record.default_records import DefaultRecordBatch as KpReader
from kafka.record.default_records import DefaultRecordBatchBuilder as KpBuilder

from kmirror.mirror.batch.records import _varint

RECORDS_PER_BATCH = 5
RUN_BYTES = 1_000_000  # librdkafka's batch.size default; the Java producer's max.request.size
LZ4 = 3
HEADER = struct.Struct(">qiibIhiqqqhii")
SOURCE_ID, TARGET_ID = 7, 1007
Merge = Callable[[Sequence[memoryview], int, "kmirror_batches.IdMap | None"], bytes]


@dataclass(frozen=True)
class Case:
    name: str
    value_size: int
    codec: int
    ids: bool = False


CASES = [
    Case("100B", 100, 0),
    Case("100B-lz4", 100, LZ4),
    Case("1KB", 1024, 0),
    Case("1KB-lz4", 1024, LZ4),
    Case("100B-ids", 100, 0, ids=True),
]


def source_batches(case: Case, count: int) -> tuple[bytes, list[list[memoryview]]]:
    """`count` batches back to back, and the runs they are cut into."""
    value = bytes(range(256)) * (case.value_size // 256 + 1)
    blob = bytearray()
    offset, ts = 0, 1_760_000_000_000
    for b in range(count):
        builder = AioBuilder(2, case.codec, 0, -1, -1, -1, 1 << 20)
        for i in range(RECORDS_PER_BATCH):
            v = value[(b + i) % 256 :][: case.value_size]
            if case.ids:
                v = b"\x00" + SOURCE_ID.to_bytes(4, "big") + v[5:]
            builder.append(i, ts + i, b"key-%012d" % (offset + i), v, [("trace", b"abc123")])
        data = bytearray(builder.build())
        data[0:8] = offset.to_bytes(8, "big")
        blob += data
        offset += RECORDS_PER_BATCH
        ts += 3
    view = memoryview(bytes(blob))
    runs: list[list[memoryview]] = [[]]
    size, pos = 0, 0
    while pos < len(view):
        length = 12 + int.from_bytes(view[pos + 8 : pos + 12], "big")
        if size + length > RUN_BYTES and runs[-1]:
            runs.append([])
            size = 0
        runs[-1].append(view[pos : pos + length])
        size += length
        pos += length
    return bytes(view), runs


# -- candidates ------------------------------------------------------------------------------


def native(run: Sequence[memoryview], codec: int, ids: kmirror_batches.IdMap | None) -> bytes:
    return kmirror_batches.merge(run, ids=ids).data


def library(reader: type, builder: type) -> Merge:
    """A merge with a client library's record-batch reader and builder: every record decoded
    into Python objects and appended to a new batch."""

    def merge(run: Sequence[memoryview], codec: int, ids: kmirror_batches.IdMap | None) -> bytes:
        out = builder(2, codec, 0, -1, -1, -1, 1 << 30)
        i = 0
        for view in run:
            for rec in reader(view):
                value = rec.value
                if ids is not None and value is not None:
                    value = _translate(value, ids)
                out.append(i, rec.timestamp, rec.key, value, rec.headers)
                i += 1
        return bytes(out.build())

    return merge


def _translate(value: bytes, ids: kmirror_batches.IdMap) -> bytes:
    if len(value) >= 5 and value[0] == 0:
        target = ids.get(int.from_bytes(value[1:5], "big"))
        if target is not None:
            return value[:1] + target.to_bytes(4, "big") + value[5:]
    return value


def _put_varint(out: bytearray, v: int) -> None:
    z = (v << 1) ^ (v >> 63)
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)


def _translated(rest: memoryview, ids: kmirror_batches.IdMap) -> bytearray:
    """A record's key and value (and headers) copied once, the value's schema ID translated in
    place (the one copy the loop made before it was typed)."""
    out = bytearray(rest)
    key_len, q = _varint(rest, 0)
    q += max(key_len, 0)
    value_len, q = _varint(rest, q)
    if value_len >= 5 and out[q] == 0:
        target = ids.get(int.from_bytes(out[q + 1 : q + 5], "big"))
        if target is not None:
            out[q + 1 : q + 5] = target.to_bytes(4, "big")
    return out


def python(run: Sequence[memoryview], codec: int, ids: kmirror_batches.IdMap | None) -> bytes:
    """The merge as a Python loop: what a pure-Python fallback would cost."""
    body = bytearray()
    index, base_ts, max_ts = 0, None, -1
    for view in run:
        (_, _, _, _, _, _, _, first_ts, _, _, _, _, count) = HEADER.unpack_from(view)
        base_ts = first_ts if base_ts is None else base_ts
        section = view[61:]
        if codec == LZ4:
            section = memoryview(bytes(cramjam.lz4.decompress(section)))
        pos = 0
        for _ in range(count):
            length, start = _varint(section, pos)
            end = start + length
            ts_delta, p = _varint(section, start + 1)
            _, p = _varint(section, p)
            ts = first_ts + ts_delta
            max_ts = max(max_ts, ts)
            rec = bytearray()
            _put_varint(rec, ts - base_ts)
            _put_varint(rec, index)
            rest = section[p:end] if ids is None else _translated(section[p:end], ids)
            _put_varint(body, 1 + len(rec) + len(rest))
            body.append(section[start])
            body += rec
            body += rest
            index += 1
            pos = end
    if codec == LZ4:
        compressor = cramjam.lz4.Compressor(content_checksum=False, block_linked=False)
        compressor.compress(bytes(body))
        body = bytearray(bytes(compressor.finish()))
    out = bytearray(61) + body
    HEADER.pack_into(
        out, 0, 0, len(out) - 12, -1, 2, 0, codec, index - 1, base_ts, max_ts, -1, -1, -1, index
    )
    struct.pack_into(">I", out, 17, crc32c.crc32c(memoryview(out)[21:]))
    return bytes(out)


CANDIDATES: dict[str, Merge] = {
    "python": python,
    "kafka-python": library(KpReader, KpBuilder),
    "aiokafka": library(AioReader, AioBuilder),
    "native": native,
}


# -- measurement -----------------------------------------------------------------------------


def records_of(data: bytes) -> list[tuple[object, ...]]:
    batch = AioReader(data)
    if not batch.validate_crc():
        raise SystemExit("a candidate built a batch with a wrong CRC")
    return [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in batch]


def measure(case: Case, count: int, reps: int, only: set[str]) -> dict[str, float | None]:
    _, runs = source_batches(case, count)
    records = count * RECORDS_PER_BATCH
    ids = kmirror_batches.IdMap({SOURCE_ID: TARGET_ID}) if case.ids else None
    want = records_of(native(runs[0], case.codec, ids))
    out: dict[str, float | None] = {}
    for name, merge in CANDIDATES.items():
        if name not in only or (name == "kafka-python" and case.codec):
            out[name] = None
            continue
        if records_of(merge(runs[0], case.codec, ids)) != want:
            raise SystemExit(f"{name}: {case.name}: records differ from the native merge")
        best = float("inf")
        for _ in range(reps):
            start = time.process_time()
            for run in runs:
                merge(run, case.codec, ids)
            best = min(best, time.process_time() - start)
        out[name] = best / records * 1e6
        print(f"  {case.name:9} {name:13} {out[name]:7.3f} CPU µs/record", flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=20_000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--only", default=",".join(CANDIDATES), help="comma list of candidates")
    ap.add_argument("--cases", default=",".join(c.name for c in CASES))
    ap.add_argument("--json-out")
    args = ap.parse_args()
    only = set(args.only.split(","))
    load_before = os.getloadavg()
    results = {
        case.name: measure(case, args.batches, args.reps, only)
        for case in CASES
        if case.name in args.cases.split(",")
    }
    load_after = os.getloadavg()
    report = {
        "batches": args.batches,
        "records_per_batch": RECORDS_PER_BATCH,
        "run_bytes": RUN_BYTES,
        "reps": args.reps,
        "cpu_us_per_record": results,
        "loadavg_before": load_before,
        "loadavg_after": load_after,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }
    print(json.dumps(report, indent=2))
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The vocabulary of a comparison, shared by compare, report and validate (no Spark here).

A *problem kind* is what one record's trouble is called: in the problem rows of
`compare.classify`, as the key of report examples, and (through `counter`) as the partition
counter of the report.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Kind:
    name: str  # problem rows and example keys
    counter: str  # the PartitionResult attribute that counts it
    where: str  # the offset the summary line shows: "source" or "target"
    failure: bool = True  # False: reported, never a reason for MISMATCH by itself


MISSING = Kind("missing", "missing", "source")
EXTRA = Kind("extra", "extra", "target")
DUPLICATE = Kind("duplicate", "duplicates", "source")
DIFFERS = Kind("differs", "differs", "source")
ORDER = Kind("order", "order_violations", "source")
PENDING = Kind("pending", "pending", "source", failure=False)
# In the order the summary and the chispa-style check list them.
KINDS = (MISSING, DUPLICATE, DIFFERS, ORDER, EXTRA)
BY_NAME = {k.name: k for k in (*KINDS, PENDING)}

# The fields a record is compared on: report name -> normalised column.
FIELDS = (("key", "k1"), ("value", "vh"), ("headers", "hh"), ("timestamp", "ts"))
FIELD_NAMES = tuple(name for name, _ in FIELDS)
# Pairing passes for records that lost their digest twin: join keys, in this order.
PAIRINGS: tuple[tuple[str, ...], ...] = (
    ("k1", "ts"),  # same key and timestamp: value and/or headers differ
    ("k1", "vh", "hh"),  # same key, value, headers: timestamp differs
    ("k1",),  # same key: several fields differ
    ("vh", "hh", "ts"),  # same value, headers, timestamp: key differs
)

# Salt for the second half of the 128-bit digest (independent of the first half).
SALT = 0x6B6D6972726F72
HEADERS_TYPE = "array<struct<key:string,value:binary>>"
TP = ["topic", "partition"]

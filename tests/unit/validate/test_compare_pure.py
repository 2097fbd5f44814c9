"""The comparison's Spark-free parts: pairing damaged records, the order check, the error
form, and the promise that they (and the report) import without pyspark."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kmirror_validate.compare import pairing
from kmirror_validate.compare.order import order_violators
from kmirror_validate.compare.outcome import Difference, MirrorMismatchError

pytestmark = pytest.mark.unit


def test_spark_free_modules_import_without_pyspark() -> None:
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('pyspark', 'py4j'):\n"
        "            raise ImportError('no pyspark here')\n"
        "sys.meta_path.insert(0, Block())\n"
        "from kmirror_validate.compare import kinds, order, outcome, pairing\n"
        "from kmirror_validate import report\n"
        "import kmirror_validate.compare as c\n"
        "assert c.pair_records is pairing.pair_records\n"
        "try:\n"
        "    c.normalize\n"
        "except ImportError:\n"
        "    print('spark parts need pyspark')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "spark parts need pyspark"


@pytest.mark.parametrize(
    ("order", "violators"),
    [
        ([0, 1, 2, 3], []),
        ([0, 2, 1, 3], [2]),  # neighbours: the one that comes first on the target
        ([0, 1, 7, 3, 4, 5, 6, 2, 8], [2, 7]),  # far apart: both
        ([5, 0, 1, 2, 3, 4], [5]),  # one record moved to the front
        ([1, 2, 3, 4, 0], [0]),  # one record moved to the end
        ([3, 2, 1, 0], [1, 2, 3]),
        ([], []),
    ],
)
def test_order_violators(order: list[int], violators: list[int]) -> None:
    assert order_violators(order) == violators


def test_pair_records_classifies_damage() -> None:
    # source (offset, partition, post, k1, vh, hh, ts); target (offset, partition, k1, vh,
    # hh, ts)
    src = [
        (1, 0, False, 11, 21, 31, 100),  # value damaged
        (2, 0, False, 12, 22, 32, 200),  # timestamp damaged
        (3, 0, False, 13, 23, 33, 300),  # key damaged
        (4, 0, False, 14, 24, 34, 400),  # gone
        (5, 0, True, 15, 25, 35, 500),  # gone, but newer than the snapshot
        (6, 0, False, 16, 26, 36, 600),  # headers and timestamp damaged
    ]
    tgt = [
        (10, 0, 11, 99, 31, 100),
        (11, 0, 12, 22, 32, 299),
        (12, 0, 77, 23, 33, 300),
        (13, 0, 16, 26, 98, 601),
        (14, 0, 55, 55, 55, 555),  # foreign
    ]
    got = {(p[0], p[1], p[3], tuple(p[5])) for p in pairing.pair_records(src, tgt)}
    assert got == {
        ("differs", 1, 10, ("value",)),
        ("differs", 2, 11, ("timestamp",)),
        ("differs", 3, 12, ("key",)),
        ("differs", 6, 13, ("headers", "timestamp")),
        ("missing", 4, None, ()),
        ("pending", 5, None, ()),
        ("extra", None, 14, ()),
    }


def test_pair_records_pairs_equal_keys_in_offset_order() -> None:
    src = [(1, 0, False, 1, 10, 0, 7), (2, 0, False, 1, 11, 0, 7)]
    tgt = [(5, 0, 1, 90, 0, 7), (6, 0, 1, 91, 0, 7)]
    pairs = [(p[1], p[3]) for p in pairing.pair_records(src, tgt)]
    assert pairs == [(1, 5), (2, 6)]


def test_mismatch_error_lists_differences() -> None:
    err = MirrorMismatchError([
        Difference("t", 0, "differs", 1, ({"source_offset": 4, "target_offset": 3,
                                          "fields": ["value"]},)),
    ])  # fmt: skip
    assert "t/0: 1 differs [source offset 4 -> target offset 3 (value differ)]" in str(err)

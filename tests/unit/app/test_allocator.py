"""A stream process's large buffers reuse the heap's pages (kmirror.app.allocator): the page
faults that cost a stream most of the CPU time of receiving a fetch response are gone."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit

# What a stream does with a fetch response 50 times: a 4 MB response buffer, the records of
# its 16 partitions copied out of it, all freed once copied; prints the page faults that took
# (after the settings when asked for).
_PROGRAM = """
import resource, sys
from kmirror.app.allocator import settle_allocator
applied = settle_allocator() if sys.argv[1] == "settled" else None
def response():
    buffer = bytearray(4 << 20)
    return [bytes(memoryview(buffer)[i << 18 : (i + 1) << 18]) for i in range(16)]
response()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(50):
    response()
print(applied, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def faults(mode: str) -> tuple[str, int]:
    out = subprocess.run(
        [sys.executable, "-c", _PROGRAM, mode], capture_output=True, text=True, check=True
    ).stdout.split()
    return out[0], int(out[1])


def test_a_freed_large_buffer_is_reused_without_faulting_its_pages_again() -> None:
    applied, settled = faults("settled")
    assert applied == "True"  # glibc: the machines and the image run on it
    # 50 buffers of 1,024 pages each: without the settings every page faults again (the
    # default's count is printed with the failure, for comparison).
    assert settled < 1_000, f"{settled} page faults (default allocator: {faults('default')[1]})"

"""`kmirror` with stream.CONSUME_BATCH / CONSUME_TIMEOUT_S taken from KMIRROR_BENCH_CONSUME_BATCH /
KMIRROR_BENCH_CONSUME_TIMEOUT_S (experiments only; the engine itself is unchanged).

The patch runs at import, so it also applies in the stream processes: multiprocessing's spawn
re-imports this main module in every child before it runs the stream.
"""

from __future__ import annotations

import os
import sys

import kmirror.mirror.stream as _stream

_batch = os.environ.get("KMIRROR_BENCH_CONSUME_BATCH")
if _batch:
    _stream.CONSUME_BATCH = int(_batch)
_timeout = os.environ.get("KMIRROR_BENCH_CONSUME_TIMEOUT_S")
if _timeout:
    _stream.CONSUME_TIMEOUT_S = float(_timeout)

if __name__ == "__main__":
    from kmirror.cli.main import entry

    sys.exit(entry())  # type: ignore[func-returns-value]

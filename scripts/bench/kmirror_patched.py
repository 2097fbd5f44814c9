"""`kmirror run` with the engine's tuning (records per consume call, the wait for a first record)
taken from KMIRROR_BENCH_CONSUME_BATCH / KMIRROR_BENCH_CONSUME_TIMEOUT_S (experiments only).

The values reach every stream process through the supervisor's `tuning` argument, the same way
the defaults do: no module constant is patched.
"""

from __future__ import annotations

import os
import sys

from kmirror.cli.main import build_parser
from kmirror.cli.run import run
from kmirror.errors import KmirrorError
from kmirror.mirror.stream import Tuning


def tuning_from_env() -> Tuning:
    default = Tuning()
    batch = os.environ.get("KMIRROR_BENCH_CONSUME_BATCH")
    timeout = os.environ.get("KMIRROR_BENCH_CONSUME_TIMEOUT_S")
    return Tuning(
        consume_batch=int(batch) if batch else default.consume_batch,
        consume_timeout_s=float(timeout) if timeout else default.consume_timeout_s,
    )


def main() -> int:
    args = build_parser().parse_args()
    if args.command != "run":
        raise SystemExit("scripts.bench.kmirror_patched only runs `kmirror run`")
    try:
        return run(args, tuning_from_env())
    except KmirrorError as exc:
        print(f"kmirror: error: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())

"""The batch path's receive side alone: CPU per byte of fetch responses read from a socket and
decoded, with glibc's allocator settings and with a stream's (kmirror.app.allocator).

    python -m scripts.bench.receive [--sizes 500000,4000000] [--responses 80] [--reps 3]

Each measurement runs in a fresh process: fetch responses of 16 partitions (random records) are
written to a socketpair one at a time, and the reader's CPU time (process time) from the
write to the decoded response is summed, as ``kmirror.kafka.receive`` reads them in a stream.
Prints one line per run and the medians. docs/benchmarks.md, Session 24.
"""

from __future__ import annotations

import argparse
import json
import random
import selectors
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence

MODES = ("defaults", "settled")


def measure(mode: str, size: int, responses: int) -> float:
    """CPU ns per received byte (in this process; `mode` applied first)."""
    from kafka.protocol.parser import KafkaProtocol

    from kmirror.app.allocator import settle_allocator
    from kmirror.kafka import receive
    from tests.unit.kafka.test_receive import _Transport, fetch_frame

    if mode == "settled" and not settle_allocator():
        raise SystemExit("mallopt refused the settings: nothing to compare")
    receive.install()
    rng = random.Random(size)
    protocol = KafkaProtocol(client_id="bench")
    records = [rng.randbytes(size // 16) for _ in range(16)]
    frames = [fetch_frame(protocol, records) for _ in range(responses)]
    ours, theirs = socket.socketpair()
    for end in (ours, theirs):
        end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16 << 20)
        end.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
    ours.setblocking(False)
    transport = _Transport(ours, protocol)
    selector = selectors.DefaultSelector()
    selector.register(ours, selectors.EVENT_READ)
    cpu = 0.0
    for frame in frames:
        theirs.sendall(frame)
        start = time.process_time()
        decoded: list[object] = []
        while not decoded:
            selector.select()
            data, err = receive._recv(transport)
            if err is not None:
                raise err
            decoded = protocol.receive_bytes(data)
        cpu += time.process_time() - start
    return cpu * 1e9 / sum(len(f) for f in frames)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="500000,4000000", help="bytes of records per response")
    parser.add_argument("--responses", type=int, default=80)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--one", nargs=2, metavar=("MODE", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(measure(args.one[0], int(args.one[1]), args.responses)))
        return 0
    for size in (int(s) for s in args.sizes.split(",")):
        results: dict[str, list[float]] = {mode: [] for mode in MODES}
        for rep in range(args.reps):
            for mode in MODES:
                out = subprocess.run(
                    [sys.executable, "-m", "scripts.bench.receive", "--one", mode, str(size),
                     "--responses", str(args.responses)],
                    capture_output=True, text=True, check=True,
                )  # fmt: skip
                ns = float(out.stdout)
                results[mode].append(ns)
                print(f"{size:>9,} B responses, {mode:8}, rep {rep + 1}: {ns:.3f} ns/B")
        medians = {mode: statistics.median(v) for mode, v in results.items()}
        print(
            f"{size:>9,} B responses: median {medians['defaults']:.3f} ns/B with glibc's "
            f"defaults, {medians['settled']:.3f} settled "
            f"({medians['defaults'] / medians['settled']:.1f}x)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Run the real `kmirror` command as a subprocess, the way users and the image do.

The process handling and the MirrorMaker 1 files are shared with the benchmark
(scripts/kmirrorproc.py); this adds what tests need on top: a free metrics port and /readyz.
"""

from __future__ import annotations

import os
import random
import socket
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from scripts.kmirrorproc import (
    KMIRROR,
    REPO_ROOT,
    ProcessGroup,
    mm1_args,
    run_to_end,
    write_properties,
)
from tests.kafkatools import Clusters, wait_until

__all__ = [
    "KMIRROR",
    "REPO_ROOT",
    "MirrorProcess",
    "free_port",
    "mirror_args",
    "run_cli",
    "write_properties",
]


def with_test_engine(args: Sequence[str], env: Mapping[str, str] | None = None) -> list[str]:
    """`run` argv with `--engine $KMIRROR_TEST_ENGINE` added (the same tests run on either
    path: KMIRROR_TEST_ENGINE=record pytest ...; without it, the default engine), unless the
    test chose an engine itself or asks for what the batch path refuses (hash partitioning,
    the provenance header, OAUTHBEARER, Kerberos, PKCS#12 keystores)."""
    engine = os.environ.get("KMIRROR_TEST_ENGINE", "").strip()
    merged = {**os.environ, **(env or {})}
    out = [*args]
    refused = (
        "hash" in out
        or merged.get("KMIRROR_PARTITIONING", "") == "hash"
        or "--provenance-header" in out
        or merged.get("KMIRROR_ENGINE")
        or any("provenance.header.enabled=true" in _file_after(out, f) for f in _MM2_FLAGS)
        or any(
            word in _file_after(out, f).upper()
            for f in (*_MM2_FLAGS, *_CLIENT_FLAGS)
            for word in _BATCH_REFUSES
        )
    )
    if engine and out and out[0] == "run" and "--engine" not in out and not refused:
        out += ["--engine", engine]
    return out


_MM2_FLAGS = ("--mm2-config", "--mm2.config")
_CLIENT_FLAGS = ("--consumer.config", "--producer.config")
# Security settings the batch path refuses (kmirror.kafka.wireconf): such a test runs on
# the record engine.
_BATCH_REFUSES = ("OAUTHBEARER", "GSSAPI", "KEYSTORE.LOCATION", "AWS_MSK_IAM")


def _file_after(args: list[str], flag: str) -> str:
    """The text of the file named after flag in args ("" without one)."""
    if flag not in args or args.index(flag) + 1 >= len(args):
        return ""
    try:
        return Path(args[args.index(flag) + 1]).read_text(encoding="utf-8").replace(" ", "")
    except OSError:
        return ""


# Consumer settings for a test that kills a mirror with SIGKILL and starts another in its group:
# the dead member holds its partitions for session.timeout.ms (Java and librdkafka default 45 s;
# the broker's minimum is 6 s), so the restart gets them within seconds instead of 45.
QUICK_REJOIN: dict[str, object] = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 1000}


# Ports handed to servers the tests start (registries, metrics, Spark, Toxiproxy) come from
# below the kernel's ephemeral range (32768-60999 here): a port the kernel picked for us there can
# be given to any outgoing connection (a Kafka client's, the JVM's) before the server binds it,
# which once failed CI's run with "Address already in use". Fixed test ports (clusters 16092-31393,
# registries 18081/28081) lie outside this window.
_PORT_WINDOW = range(11000, 13000)


def free_port(count: int = 1) -> int:
    """The first of `count` consecutive ports nobody listens on, from a window no fixed test port
    and no outgoing connection uses (servers such as Apicurio also bind the port after theirs)."""
    rng = random.Random()
    for _ in range(200):
        first = rng.randrange(_PORT_WINDOW.start, _PORT_WINDOW.stop - count)
        if all(_bindable(p) for p in range(first, first + count)):
            return first
    raise RuntimeError(f"no {count} free consecutive ports in {_PORT_WINDOW}")


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def mirror_args(
    workdir: Path,
    clusters: Clusters,
    group: str,
    whitelist: str,
    consumer: Mapping[str, object] | None = None,
    producer: Mapping[str, object] | None = None,
    *extra: str,
    prefix: str = "",
    commit_interval_ms: int = 1000,
) -> list[str]:
    """MirrorMaker 1 `run` argv from the local source to the local target (commits every 1 s)."""
    return mm1_args(
        workdir,
        clusters.source_bootstrap,
        clusters.target_bootstrap,
        group,
        whitelist,
        consumer=consumer,
        producer=producer,
        commit_interval_ms=commit_interval_ms,
        extra=extra,
        prefix=prefix,
    )


class MirrorProcess(ProcessGroup):
    """`kmirror <args>` in the background with its output captured to a file."""

    def __init__(
        self,
        args: Sequence[str],
        log_path: Path,
        env: Mapping[str, str] | None = None,
        metrics_port: int | None = None,
    ) -> None:
        self.metrics_port = free_port() if metrics_port is None else metrics_port
        self.args = with_test_engine(args, env)
        if "--metrics-port" not in self.args and args and args[0] == "run":
            self.args += ["--metrics-port", str(self.metrics_port)]
        super().__init__([*KMIRROR, *self.args], log_path, env)

    def start(self) -> MirrorProcess:
        super().start()
        return self

    def __enter__(self) -> MirrorProcess:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        if exc_type is not None:
            # The log lives under pytest's tmp_path, which later sessions rotate away (one
            # failure under load in session 21 lost it): a failed test keeps its last lines
            # in the captured output pytest reports.
            print(f"--- last lines of {self.log_path} ---\n{self.log_tail(80)}")
        if self.running():
            self.kill()

    def get(self, path: str, timeout: float = 2.0) -> tuple[int, str]:
        import urllib.error
        import urllib.request

        try:
            with urllib.request.urlopen(
                f"http://127.0.0.1:{self.metrics_port}{path}", timeout=timeout
            ) as r:
                return int(r.status), r.read().decode()
        except urllib.error.HTTPError as e:
            return int(e.code), e.read().decode()

    def wait_ready(self, timeout: float = 60.0) -> None:
        def ready() -> bool:
            if not self.running():
                raise AssertionError(f"kmirror exited early:\n{self.log}")
            try:
                return self.get("/readyz")[0] == 200
            except OSError:
                return False

        wait_until(ready, timeout, 0.3)


def run_cli(
    args: Sequence[str], timeout: float = 120.0, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `kmirror <args>` to completion (env merged over os.environ); `.elapsed` = seconds."""
    return run_to_end(
        [*KMIRROR, *with_test_engine(args, env)], {**os.environ, **(env or {})}, timeout
    )

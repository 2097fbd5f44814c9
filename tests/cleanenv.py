"""Run kmirror with an environment that holds nothing kmirror reads except what a test gives.

tests/mirrorproc.py merges a test's variables over the developer's environment; a stray
SOURCE_CLUSTER_* or MIRROR_MAKER_* there would change what the command does. These wrappers
replace the environment instead.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from kmirror.config.env import BY_NAME
from scripts.kmirrorproc import KMIRROR, run_to_end
from tests.mirrorproc import MirrorProcess

_PREFIXES = ("KMIRROR_", "MIRROR_MAKER_", "SOURCE_CLUSTER_", "SINK_CLUSTER_")
_KEEP = ("KMIRROR_CACHE", "KMIRROR_SPARK_JARS")


def kmirror_env(extra: Mapping[str, str]) -> dict[str, str]:
    """os.environ without any variable kmirror reads, KMIRROR_METRICS_PORT=0, then extra."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k in _KEEP or (k not in BY_NAME and not k.startswith(_PREFIXES))
    }
    env["KMIRROR_METRICS_PORT"] = "0"
    env.update(extra)
    return env


def run_kmirror(
    args: Sequence[str], env: Mapping[str, str], timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    """`kmirror <args>` to completion with exactly `env`; `.elapsed` holds the seconds."""
    return run_to_end([*KMIRROR, *args], env, timeout)


def mirror_process(
    args: Sequence[str], log: Path, env: Mapping[str, str], metrics_port: int | None = None
) -> MirrorProcess:
    """A MirrorProcess (not started) whose environment is exactly `env`."""
    proc = MirrorProcess(args, log, metrics_port=metrics_port)
    proc.env = dict(env)
    return proc

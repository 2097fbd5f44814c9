"""Fixtures of the image tests: the two images, built once per session with scripts/build-image
(layer-cached: seconds when nothing changed), and containers run the hardened way."""

from __future__ import annotations

import contextlib
import subprocess
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from kmirror import __version__
from tests import prebuild

REPO = Path(__file__).resolve().parents[2]
PODMAN = str(REPO / "scripts" / "podman")
BUILD_TIMEOUT_S = 1800.0
MIRROR = "localhost/kmirror"
VALIDATE = "localhost/kmirror-validate"


def podman(
    *args: str, timeout: float = 120.0, check: bool = True, input_text: str | None = None
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [PODMAN, *args],
        input=input_text,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"podman {' '.join(args)} exited {result.returncode}:\n{result.stdout}{result.stderr}"
        )
    return result


@dataclass(frozen=True)
class Images:
    mirror: str
    validate: str
    build_seconds: float


@pytest.fixture(scope="session")
def images() -> Images:
    """Both images, built (or found up to date) by scripts/build-image once per session:
    in the session's background (tests/prebuild.py), then checked up to date here."""
    start = time.monotonic()
    try:
        prebuild.IMAGES.wait(BUILD_TIMEOUT_S)
    except RuntimeError as exc:
        pytest.fail(f"scripts/build-image failed: {exc}", pytrace=False)
    result = subprocess.run(
        [str(REPO / "scripts" / "build-image")],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )
    if result.returncode != 0:
        pytest.fail(
            f"scripts/build-image failed:\n{result.stdout}\n{result.stderr[-6000:]}", pytrace=False
        )
    return Images(f"{MIRROR}:{__version__}", f"{VALIDATE}:{__version__}", time.monotonic() - start)


# The hardened way to run the mirror: what the Helm chart asks of Kubernetes. The root
# filesystem is read-only and, unlike podman's default, /run and /var/tmp are not made
# writable: only the image's declared /tmp volume is.
HARDENED = (
    "--read-only",
    "--read-only-tmpfs=false",
    "--user",
    "65532:65532",
    "--cap-drop",
    "ALL",
    "--security-opt",
    "no-new-privileges",
    "--network",
    "host",
)
# Exec of any shell fails in these containers: proof that nothing at runtime needs one.
NO_SHELL = (
    "--mount",
    "type=bind,src=/dev/null,dst=/usr/bin/dash,ro",
    "--mount",
    "type=bind,src=/dev/null,dst=/usr/bin/bash,ro",
)


def env_args(env: Mapping[str, str]) -> list[str]:
    return [a for k, v in env.items() for a in ("--env", f"{k}={v}")]


class Container:
    """A detached container; removed (with its anonymous /tmp volume) on exit."""

    def __init__(
        self,
        image: str,
        env: Mapping[str, str],
        extra: Sequence[str] = (),
        args: Sequence[str] = (),
    ) -> None:
        self.name = f"kmirror-test-{uuid.uuid4().hex[:10]}"
        self.image = image
        self.cmd = [
            "run",
            "--detach",
            "--name",
            self.name,
            *HARDENED,
            *extra,
            *env_args(env),
            image,
            *args,
        ]

    def __enter__(self) -> Container:
        podman(*self.cmd)
        return self

    def __exit__(self, *exc: object) -> None:
        podman("rm", "--force", "--volumes", "--time", "0", self.name, check=False)

    def running(self) -> bool:
        state = podman("inspect", "--format", "{{.State.Running}}", self.name, check=False)
        return state.stdout.strip() == "true"

    def logs(self) -> str:
        result = podman("logs", self.name, check=False)
        return result.stdout + result.stderr

    def wait(self, timeout: float = 90.0) -> int:
        return int(podman("wait", self.name, timeout=timeout).stdout.strip().splitlines()[-1])

    def exit_code(self) -> int:
        return int(podman("inspect", "--format", "{{.State.ExitCode}}", self.name).stdout)


def run_once(
    image: str,
    env: Mapping[str, str],
    extra: Sequence[str] = (),
    args: Sequence[str] = (),
    timeout: float = 120.0,
) -> subprocess.CompletedProcess[str]:
    """Run a container to completion (removed afterwards); stdout/stderr kept apart."""
    return podman(
        "run", "--rm", *HARDENED, *extra, *env_args(env), image, *args, timeout=timeout, check=False
    )


@pytest.fixture
def secret_file(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A password file as Kubernetes mounts one (readable by the container user)."""
    value = f"pw-{uuid.uuid4().hex}-$#=\\"
    path = tmp_path / "password"
    path.write_text(value + "\n", encoding="utf-8")
    path.chmod(0o644)
    with contextlib.suppress(OSError):
        tmp_path.chmod(0o755)
    yield path, value

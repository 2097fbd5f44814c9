"""The driver JVM's stderr filter (kmirror_validate/sparklog.py), with a real child process in
place of the JVM: the JVM's incubator-module line is dropped, every other line passes, and this
process's own stderr is untouched afterwards."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from kmirror_validate import sparklog

pytestmark = pytest.mark.unit

CHILD = (
    "import sys; "
    "sys.stderr.write('WARNING: Using incubator modules: jdk.incubator.vector\\n'); "
    "sys.stderr.write('WARN a real warning\\n'); sys.stderr.write('no newline at the end')"
)


def test_the_incubator_line_is_dropped_and_the_rest_passes(
    capfd: pytest.CaptureFixture[str],
) -> None:
    with sparklog.jvm_stderr_filtered():
        child = subprocess.Popen([sys.executable, "-c", CHILD])
    child.wait(timeout=30)
    print("this process", file=sys.stderr, flush=True)  # its own stderr: as before
    err = ""
    deadline = time.monotonic() + 10
    while "no newline at the end" not in err and time.monotonic() < deadline:
        time.sleep(0.05)  # the filter thread forwards the child's lines asynchronously
        err += capfd.readouterr().err
    assert "Using incubator modules" not in err
    assert "WARN a real warning\n" in err
    assert "no newline at the end" in err
    assert "this process\n" in err

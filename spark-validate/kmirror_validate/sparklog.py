"""What the Spark driver prints while it starts: only what matters to a validation run.

Spark logs through log4j2 in its JVM, configured before any Python code can call setLogLevel,
so its start-up lines come from the JVM's configuration: log4j2.properties beside this module
(Spark's defaults at WARN, Hadoop's optional native library quiet) passed with
spark.driver.extraJavaOptions. In local mode the driver and its executors share this machine,
so they bind to 127.0.0.1 (SPARK_LOCAL_IP) instead of Spark guessing an address from the host
name and warning when that resolves to a loopback address.

One line is not the JVM's logging but the JVM itself: Spark 4's launcher always adds
`--add-modules=jdk.incubator.vector` (its JavaModuleOptions), and the JVM then prints
"WARNING: Using incubator modules: jdk.incubator.vector" on stderr at every start; no JVM option
silences it. So the driver JVM (pyspark starts it as a child that inherits this process's
stderr) writes its stderr through a pipe that drops that one line and passes every other byte.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources

LOCAL_IP = "SPARK_LOCAL_IP"
# Lines of the driver JVM's stderr that say nothing about this run (see the module doc).
JVM_NOISE = (b"WARNING: Using incubator modules: jdk.incubator.vector",)


def driver_java_options() -> str:
    """spark.driver.extraJavaOptions naming our log4j2 configuration (a --spark-conf of the same
    key replaces it)."""
    path = resources.files("kmirror_validate").joinpath("log4j2.properties")
    return f'-Dlog4j2.configurationFile="{path}"'


def bind_locally(master: str | None) -> None:
    """For a local master, SPARK_LOCAL_IP=127.0.0.1 in the environment the driver JVM inherits
    from this process (pyspark starts it), unless it is set already."""
    if master is None or master.startswith("local"):
        os.environ.setdefault(LOCAL_IP, "127.0.0.1")


@contextmanager
def jvm_stderr_filtered() -> Iterator[None]:
    """Children started inside this block (the driver JVM) write their stderr through a filter
    that drops the JVM_NOISE lines; this process's own stderr is itself again afterwards. The
    filter runs as long as a child holds the pipe, and ends at its EOF."""
    sys.stderr.flush()
    out = os.dup(2)  # where the filtered lines go: the real stderr
    read, write = os.pipe()
    os.dup2(write, 2)
    os.close(write)
    threading.Thread(target=_forward, args=(read, out), name="jvm-stderr", daemon=True).start()
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(out, 2)  # the children keep the pipe; this process writes to stderr directly


def _forward(read: int, out: int) -> None:
    with os.fdopen(read, "rb", buffering=0) as pipe, os.fdopen(out, "wb", buffering=0) as dest:
        for line in iter(pipe.readline, b""):
            if line.rstrip(b"\r\n") not in JVM_NOISE:
                dest.write(line)

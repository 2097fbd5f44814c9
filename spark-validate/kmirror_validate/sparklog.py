"""What the Spark driver prints while it starts: only what matters to a validation run.

Spark logs through log4j2 in its JVM, configured before any Python code can call setLogLevel,
so its start-up lines come from the JVM's configuration: log4j2.properties beside this module
(Spark's defaults at WARN, Hadoop's optional native library quiet) passed with
spark.driver.extraJavaOptions. In local mode the driver and its executors share this machine,
so they bind to 127.0.0.1 (SPARK_LOCAL_IP) instead of Spark guessing an address from the host
name and warning when that resolves to a loopback address.
"""

from __future__ import annotations

import os
from importlib import resources

LOCAL_IP = "SPARK_LOCAL_IP"


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

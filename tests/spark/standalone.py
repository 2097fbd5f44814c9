"""A Spark standalone cluster on 127.0.0.1 from the installed pyspark's own classes: one master
and two small workers (1 core, 640 MB each), started by a test fixture and stopped with it."""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyspark

from tests.mirrorproc import free_port

SPARK_HOME = Path(pyspark.__file__).resolve().parent
WORKERS = 2
WORKER_MEMORY = "640m"
EXECUTOR_MEMORY = "512m"  # must fit in a worker


def _alive_workers(ui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as r:
            return int(json.load(r).get("aliveworkers", 0))
    except OSError:
        return 0


@contextmanager
def standalone_cluster(workdir: Path) -> Iterator[str]:
    """Start the cluster; yields its master URL (spark://127.0.0.1:PORT)."""
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_DAEMON_MEMORY": "256m",
           "SPARK_LOG_DIR": str(workdir), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_NO_DAEMONIZE": "1"}  # fmt: skip
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    port = free_port(2 + WORKERS)  # the master, its UI, one UI per worker
    ui = port + 1
    url = f"spark://127.0.0.1:{port}"
    procs: list[subprocess.Popen[bytes]] = []

    def start(name: str, *args: str) -> None:
        log = (workdir / f"{name}.log").open("wb")
        cmd = [spark_class, *args]
        procs.append(subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                      start_new_session=True))  # fmt: skip

    try:
        start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
              "--port", str(port), "--webui-port", str(ui))  # fmt: skip
        for i in range(WORKERS):
            work = workdir / f"worker-{i}"
            work.mkdir(exist_ok=True)
            start(f"worker-{i}", "org.apache.spark.deploy.worker.Worker", url, "--host",
                  "127.0.0.1", "--cores", "1", "--memory", WORKER_MEMORY, "--webui-port",
                  str(ui + 1 + i), "--work-dir", str(work))  # fmt: skip
        deadline = time.monotonic() + 180
        while _alive_workers(ui) < WORKERS:
            dead = [p.args for p in procs if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                logs = "\n".join((workdir / f).read_text(errors="replace")[-2000:]
                                 for f in os.listdir(workdir) if f.endswith(".log"))  # fmt: skip
                raise RuntimeError(f"the standalone cluster did not start ({dead}):\n{logs}")
            time.sleep(1)
        yield url
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()

"""The JVM side: the resolved Kafka jars, the java binary and class-data sharing.

Under load a Kafka JVM spends most of its start-up loading classes. An AppCDS archive of the
classes a previous run loaded halves that (measured: 10 s -> 5.5 s on 2 busy cores). The first
JVM of a kind dumps one at exit (-XX:ArchiveClassesAtExit, written on a clean exit only); later
ones map it (-XX:SharedArchiveFile). The name is keyed on the JVM and the jar set, and a JVM
that finds the archive unusable just starts without it (-Xshare:auto). KMIRROR_KAFKA_CDS=0
turns this off.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from scripts.kafkalocal.spec import RESOLVE_JARS, ClusterError, cache_dir, cluster_dir


def jar_dir(kind: str) -> Path:
    """A jar directory resolve-jars made (kafka, mm2, spark; milliseconds when warm)."""
    proc = subprocess.run(
        [str(RESOLVE_JARS), "--print-dir", kind],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise ClusterError(f"resolve-jars {kind} failed:\n{proc.stderr.strip()}")
    return Path(proc.stdout.strip().splitlines()[-1])


def kafka_jar_dir() -> Path:
    """The Kafka broker's jars (KMIRROR_KAFKA_JARS, else resolve-jars kafka)."""
    env = os.environ.get("KMIRROR_KAFKA_JARS")
    return Path(env) if env else jar_dir("kafka")


def java_bin() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise ClusterError("java not found (Kafka 4 needs Java 17+)")
    return found


def _cds_enabled() -> bool:
    return os.environ.get("KMIRROR_KAFKA_CDS", "1") not in ("0", "false", "no", "")


def _cds_archive(kind: str, jars: Path) -> Path:
    java = Path(java_bin()).resolve()
    libjvm = next(iter(java.parent.parent.glob("lib/server/libjvm.so")), java)
    stamp = jars / ".stamp"
    key_src = "|".join(
        [
            str(java),
            str(libjvm.stat().st_mtime_ns),
            str(jars.resolve()),
            stamp.read_text().strip() if stamp.exists() else "",
        ]
    )
    key = hashlib.sha256(key_src.encode()).hexdigest()[:16]
    return cache_dir() / "cds" / f"{kind}-{key}.jsa"


def cds_args(kind: str, jars: Path, owner: str) -> tuple[list[str], Path | None]:
    """JVM flags for CDS and, when this JVM is to dump the archive, its temporary path."""
    if not _cds_enabled():
        return [], None
    archive = _cds_archive(kind, jars)
    if archive.exists():
        return [f"-XX:SharedArchiveFile={archive}"], None
    archive.parent.mkdir(parents=True, exist_ok=True)
    for stale in archive.parent.glob(f"{archive.name}.{owner}.*.tmp"):
        stale.unlink(missing_ok=True)  # left by a JVM that never exited cleanly
    tmp = archive.with_name(f"{archive.name}.{owner}.{os.getpid()}.tmp")
    return [f"-XX:ArchiveClassesAtExit={tmp}"], tmp


def cds_publish(tmp: Path | None) -> None:
    """Move a dumped archive into place (first one wins); drop it if incomplete."""
    if tmp is None:
        return
    final = tmp.with_name(tmp.name.split(".jsa.", 1)[0] + ".jsa")
    if tmp.exists() and tmp.stat().st_size > 0 and not final.exists():
        os.replace(tmp, final)
    tmp.unlink(missing_ok=True)


def cds_pending_file(name: str) -> Path:
    """Where a broker's not-yet-published archive is noted until it stops cleanly."""
    return cluster_dir(name) / "cds-pending"

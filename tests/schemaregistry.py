"""Two real schema registries for the schema tests: Apicurio Registry 3.3.3 (scripts/
registrylocal.py), one beside each cluster, started once per test session and shared.

``KMIRROR_SOURCE_REGISTRY`` / ``KMIRROR_TARGET_REGISTRY`` (both URLs of a Confluent-compatible
API) point the tests at registries that already run; otherwise the first test that asks for
``schema_registries`` starts ``registry-source`` (18081) and ``registry-target`` (28081) in
parallel, reusing ones that already answer, and the session stops only those it started.
Subjects are uuid-named per test, so sharing is safe (the registries keep everything in memory).
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest

from scripts import registrylocal


@dataclass(frozen=True)
class Registries:
    source_url: str
    target_url: str

    def mirror_flags(self, uid: str, *extra: str) -> list[str]:
        """`kmirror run` flags mirroring these registries' subjects named with `uid` (the
        session's tests share the registries: each syncs only its own subjects), on the
        record path (the batch path's ID rewrite is the batch kernel's)."""
        return [
            "--engine", "record",
            "--schema-registry-source-url", self.source_url,
            "--schema-registry-target-url", self.target_url,
            "--schema-subjects", f".*{uid}.*",
            *extra,
        ]  # fmt: skip


@pytest.fixture(scope="session")
def schema_registries() -> Iterator[Registries]:
    src = os.environ.get("KMIRROR_SOURCE_REGISTRY")
    tgt = os.environ.get("KMIRROR_TARGET_REGISTRY")
    if src and tgt:
        yield Registries(src, tgt)
        return
    specs = [registrylocal.RegistrySpec(n, p) for n, p in registrylocal.DEFAULT_REGISTRIES.items()]
    ours = [
        s.name
        for s in specs
        if not ((pid := registrylocal.read_pid(s.name)) and registrylocal.alive(pid))
    ]

    def stop_ours() -> None:
        for name in ours:
            print(f"[registries] {registrylocal.stop(name)}")
        ours.clear()

    atexit.register(stop_ours)
    try:
        with ThreadPoolExecutor(max_workers=len(specs)) as pool:
            took = list(pool.map(registrylocal.start, specs))
    except registrylocal.RegistryError as exc:
        stop_ours()
        pytest.fail(f"could not start the local schema registries:\n{exc}", pytrace=False)
    print(f"[registries] up in {max(took):.1f}s")
    try:
        yield Registries(specs[0].url, specs[1].url)
    finally:
        stop_ours()

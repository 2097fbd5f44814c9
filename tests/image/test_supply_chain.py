"""Image supply chain: hadolint passes on the Containerfiles and fails on a finding; the images
are built FROM a base pinned by digest; each image's CycloneDX SBOM (made by `make image`) is
valid and lists exactly the Python distributions and jars that the built image holds."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cyclonedx.schema import SchemaVersion
from cyclonedx.validation.json import JsonStrictValidator

from kmirror import __version__
from tests.image.conftest import REPO, Images, podman

pytestmark = pytest.mark.image

HADOLINT = REPO / ".venv" / "bin" / "hadolint"
CONTAINERFILES = [REPO / "Dockerfile", REPO / "scripts" / "k8s" / "pause" / "Containerfile"]
BASE = "docker.io/library/debian:bookworm-slim"
SBOM_DIR = REPO / ".cache" / "sbom"


def hadolint(*paths: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(HADOLINT), *map(str, paths)], capture_output=True, text=True, timeout=60, check=False
    )


def test_hadolint_finds_nothing_in_the_containerfiles() -> None:
    result = hadolint(*CONTAINERFILES)
    assert result.returncode == 0 and not result.stdout.strip(), result.stdout + result.stderr


def test_hadolint_fails_on_a_finding(tmp_path: Path) -> None:
    """The gate bites: the settings `make lint` and this test use let no finding through."""
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM debian\nRUN apt-get update && apt-get install -y curl\n")
    result = hadolint(bad)
    assert result.returncode != 0
    for rule in ("DL3006", "DL3008", "DL3015"):  # untagged base, unpinned, recommends
        assert rule in result.stdout, result.stdout


def labels(image: str) -> dict[str, str]:
    out = podman("image", "inspect", "--format", "{{json .Labels}}", image).stdout
    found: dict[str, str] = json.loads(out)
    return found


def test_images_are_built_from_the_base_pinned_by_digest(images: Images) -> None:
    digest = podman("image", "inspect", "--format", "{{.Digest}}", BASE).stdout.strip()
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", digest), digest
    for image in (images.mirror, images.validate):
        found = labels(image)
        assert found["org.opencontainers.image.base.name"] == f"{BASE}@{digest}", image
        assert found["org.opencontainers.image.base.digest"] == digest, image


# What a built image holds: its Python distributions and every jar with its sha256.
_INVENTORY = r"""
import hashlib, importlib.metadata as md, json, pathlib, re, sys
dists = sorted({(re.sub(r"[-_.]+", "-", d.metadata["Name"]).lower(), d.version)
                for d in md.distributions()})
site = pathlib.Path(sys.prefix, "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}",
                    "site-packages")
jars = {}
for root, shown in ((pathlib.Path("/opt/kmirror/jars"), "/opt/kmirror/jars"),
                    (site / "pyspark" / "jars", "site-packages/pyspark/jars")):
    for jar in sorted(root.rglob("*.jar")) if root.is_dir() else []:
        jars[f"{shown}/{jar.relative_to(root)}"] = hashlib.sha256(jar.read_bytes()).hexdigest()
print(json.dumps({"dists": dists, "jars": jars}))
"""


def inventory(image: str) -> dict[str, Any]:
    out = podman(
        "run", "--rm", "--network", "none", "--entrypoint", "/opt/kmirror/bin/python",
        image, "-c", _INVENTORY, timeout=180,
    ).stdout  # fmt: skip
    found: dict[str, Any] = json.loads(out)
    return found


def sha256s(component: dict[str, Any]) -> list[str]:
    """A component's sha256s: its own, or (cyclonedx-py) those of its distribution."""
    refs = [component, *component.get("externalReferences", [])]
    return [h["content"] for r in refs for h in r.get("hashes", []) if h["alg"] == "SHA-256"]


def wheel_pins(wheelhouse: str) -> set[tuple[str, str, str]]:
    """(name, version, sha256) of every wheel the build installs, from the pinned manifests."""
    pins = set()
    for kind in (wheelhouse, "app"):
        text = (REPO / ".cache" / "image-inputs" / kind / "requirements.txt").read_text()
        pins |= set(re.findall(r"^(\S+)==(\S+) \\\n\s+--hash=sha256:([0-9a-f]{64})", text, re.M))
    return pins


@pytest.mark.parametrize("name", ["kmirror", "kmirror-validate"])
def test_sbom_lists_what_the_image_holds(images: Images, name: str) -> None:
    path = SBOM_DIR / f"{name}.cdx.json"
    assert path.is_file(), f"{path}: `make image` (scripts/build-image) writes it"
    text = path.read_text(encoding="utf-8")
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(text) is None
    doc = json.loads(text)
    assert doc["metadata"]["component"]["name"] == name
    assert doc["metadata"]["component"]["version"] == __version__
    by_ref = {c["bom-ref"]: c for c in doc["components"]}

    image = images.mirror if name == "kmirror" else images.validate
    held = inventory(image)
    python = {
        (re.sub(r"[-_.]+", "-", c["name"]).lower(), c["version"])
        for ref, c in by_ref.items()
        if c.get("purl", "").startswith("pkg:pypi/") or ref.startswith("python:kmirror")
    }
    assert python == {tuple(d) for d in held["dists"]}
    # ... each with the sha256 of the very wheel the build installed (image-inputs' pins).
    assert {
        (re.sub(r"[-_.]+", "-", c["name"]).lower(), c["version"], digest)
        for c in by_ref.values()
        if c.get("purl", "").startswith("pkg:pypi/")
        for digest in sha256s(c)
    } == wheel_pins("runtime" if name == "kmirror" else "validate")

    def path_of(component: dict[str, Any]) -> str:
        return next(p["value"] for p in component["properties"] if p["name"] == "kmirror:path")

    jar_refs = [ref for ref in by_ref if ref.startswith("jar:")]
    jars = {path_of(by_ref[r]): by_ref[r]["hashes"][0]["content"] for r in jar_refs}
    assert jars == held["jars"]
    if name == "kmirror-validate":
        assert len(jars) > 100  # pyspark's own jars and the Kafka connector's
        maven = [c for c in by_ref.values() if c.get("purl", "").startswith("pkg:maven/")]
        connector = "pkg:maven/org.apache.spark/spark-sql-kafka-0-10_2.13@"
        assert any(c["purl"].startswith(connector) for c in maven)
    else:
        assert not jars

    base = by_ref["base-image"]
    assert base["version"] == labels(image)["org.opencontainers.image.base.digest"]
    deps = {d["ref"]: d.get("dependsOn", []) for d in doc["dependencies"]}
    assert set(deps["image"]) == {"base-image", "python:kmirror", *jar_refs}

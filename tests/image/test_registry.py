"""`make push` to a private registry and back, as a user with ECR or Harbor does it.

A distribution registry with TLS (a CA made by the test) and htpasswd auth (tests/registry.py);
`scripts/push-image` (what `make push REGISTRY=...` runs) pushes both images with podman's
login; the chart rendered with `global.imageRegistry` and `imagePullSecrets` names exactly the
pushed references and the secret; the registry serves each of them at the pushed digest; the
mirror image pulls, with credentials and the CA, into an empty image store and is the image that
was built. Without credentials, or without the CA, the pull is refused.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from kmirror import __version__
from tests.chart import chartlib
from tests.image.conftest import Images, podman
from tests.registry import PUSH, PrivateRegistry, untag_pushed

pytestmark = pytest.mark.image

PATH_IN_REGISTRY = "team"
PULL_SECRET = "kmirror-pull"


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateRegistry]:
    reg = PrivateRegistry.start(tmp_path_factory.mktemp("registry"))
    try:
        yield reg
    finally:
        reg.stop()


def test_push_then_pull_with_credentials_and_chart_references(
    images: Images, registry: PrivateRegistry, tmp_path: Path
) -> None:
    authfile = tmp_path / "auth.json"
    registry.login(authfile)
    target = f"{registry.host}/{PATH_IN_REGISTRY}"
    pushed: dict[str, str] = {}
    # An empty image store to pull into (podman wants its runroot path short).
    runroot = tempfile.mkdtemp(prefix="kmreg-", dir="/tmp")
    store = ["--root", str(tmp_path / "store"), "--runroot", runroot]
    try:
        pushed = registry.push_both(target, authfile)
        mirror_ref = f"{target}/kmirror/mirror:{__version__}"
        validate_ref = f"{target}/kmirror/validate:{__version__}"
        assert set(pushed) == {mirror_ref, validate_ref}

        # What a cluster would be told: the chart's references, resolved by global.imageRegistry.
        rendered = chartlib.helm_template(
            [
                chartlib.MINIMAL,
                {
                    "global": {"imageRegistry": target},
                    "imagePullSecrets": [PULL_SECRET],
                    "validation": {"hook": {"enabled": True}, "test": {"enabled": True}},
                },
            ]
        )
        refs: set[str] = set()
        for doc, spec in rendered.pods():
            name = f"{doc['kind']}/{doc['metadata']['name']}"
            assert spec.get("imagePullSecrets") == [{"name": PULL_SECRET}], name
            for c in spec.get("initContainers", []) + spec["containers"]:
                refs.add(c["image"])
        assert refs == {mirror_ref, validate_ref}, f"rendered images {refs}"

        # The registry serves every rendered reference, at the digest pushed.
        for ref in refs:
            assert registry.manifest_digest(ref) == pushed[ref], ref
        # The mirror image pulls into an empty store, with credentials (the login's auth file,
        # never a command line) and the CA, and is the image that was built: same image id
        # (config and layers), digest as pushed. (The 950 MB validate image would add a
        # quarter of a minute and prove nothing more.)
        podman(
            *store, "pull", "--quiet", "--cert-dir", str(registry.cert_dir),
            "--authfile", str(authfile), mirror_ref, timeout=900,
        )  # fmt: skip
        got = podman(*store, "image", "inspect", "--format", "{{.Id}} {{.Digest}}", mirror_ref)
        want_id = podman("image", "inspect", "--format", "{{.Id}}", images.mirror).stdout.strip()
        assert got.stdout.split() == [want_id, pushed[mirror_ref]]

        # Authentication and TLS are really on: no credentials, or no CA, no image.
        no_auth = tmp_path / "empty-auth.json"
        no_auth.write_text(json.dumps({"auths": {}}))
        refused = podman(
            *store, "pull", "--quiet", "--cert-dir", str(registry.cert_dir), "--authfile",
            str(no_auth), mirror_ref, check=False, timeout=300,
        )  # fmt: skip
        assert refused.returncode != 0
        assert re.search(r"authentication required|unauthorized", refused.stderr, re.I), (
            refused.stderr
        )
        no_ca = tmp_path / "no-ca"
        no_ca.mkdir()
        untrusted = podman(
            *store, "pull", "--quiet", "--cert-dir", str(no_ca),
            "--authfile", str(authfile), mirror_ref, check=False, timeout=300,
        )  # fmt: skip
        assert untrusted.returncode != 0
        assert "certificate signed by unknown authority" in untrusted.stderr, untrusted.stderr
    finally:
        untag_pushed(pushed)
        podman(*store, "rmi", "--all", "--force", check=False, timeout=300)
        shutil.rmtree(tmp_path / "store", ignore_errors=True)
        shutil.rmtree(runroot, ignore_errors=True)


@pytest.mark.parametrize(
    ("registry", "message"),
    [
        ("", "no registry given"),
        ("https://registry.example.com", "has a URL scheme"),
        ("Registry.Example.com/Team", "is not host[:port][/path]"),
        ("registry.example.com/kmirror:1.0", "is not host[:port][/path]"),
    ],
)
def test_push_refuses_a_bad_registry_before_touching_anything(registry: str, message: str) -> None:
    proc = subprocess.run(
        [str(PUSH), registry], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert "make push REGISTRY=host[:port][/path]" in proc.stderr

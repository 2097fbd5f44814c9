"""The pre-commit hooks run what `make lint` and `make typecheck` run, command for command."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def make_commands(*targets: str) -> list[str]:
    """The recipe lines of these Makefile targets, $(VENV) as the venv's path."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    venv = re.search(r"^VENV := (\S+)$", text, re.M)
    assert venv is not None
    out = []
    for target in targets:
        recipe = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", text, re.M)
        assert recipe is not None, target
        out += [
            line.strip().replace("$(VENV)", venv.group(1)) for line in recipe.group(1).splitlines()
        ]
    return out


def test_the_hooks_are_the_makefile_checks_and_download_nothing() -> None:
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    (repo,) = config["repos"]
    assert repo["repo"] == "local"  # no hook repository to fetch
    hooks = repo["hooks"]
    assert all(h["language"] == "system" and h["pass_filenames"] is False for h in hooks)
    assert [h["entry"] for h in hooks] == make_commands("lint", "typecheck")

"""Helpers for the config tests: seed files, throw-away files, the real argument parser."""

from __future__ import annotations

import argparse
import string
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from kmirror.cli.flags import add_config_arguments, options_from
from kmirror.config.dialects.loader import load_config
from kmirror.config.model import MirrorConfig

DATA = Path(__file__).parent / "data"


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, str], str]:
    def _write(name: str, text: str) -> str:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return str(path)

    return _write


@pytest.fixture
def rendered(tmp_path: Path) -> Callable[[str, Mapping[str, str]], str]:
    """A seed file after the seed's own `envsubst` step."""

    def _render(name: str, values: Mapping[str, str]) -> str:
        text = string.Template((DATA / name).read_text()).safe_substitute(values)
        path = tmp_path / name
        path.write_text(text)
        return str(path)

    return _render


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_config_arguments(parser)
    return parser.parse_args(argv)


def load(argv: list[str], env: Mapping[str, str] | None = None) -> MirrorConfig:
    return load_config(options_from(parse(argv)), dict(env or {}))


def seed(name: str) -> str:
    return str(DATA / name)

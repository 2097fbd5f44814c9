"""`kmirror env-docs`: the environment variable table for docs/configuration.md."""

from __future__ import annotations

import argparse

from kmirror.config.env import ENV_VARS


def render_table() -> str:
    lines = ["| Variable | Default | Meaning |", "|---|---|---|"]
    for var in ENV_VARS:
        default = (
            "*(required)*" if var.default is None else (f"`{var.default}`" if var.default else "")
        )
        lines.append(f"| `{var.name}` | {default} | {var.description} |")
    return "\n".join(lines) + "\n"


def env_docs(args: argparse.Namespace) -> int:
    print(render_table(), end="")
    return 0

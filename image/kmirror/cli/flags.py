"""The configuration flags of `kmirror run`, `check`, `status`, `offsets`, `failover` and
`kmirror-validate`: every option of kmirror.config.dialects.options on an argparse parser.

argparse only parses the command line: each flag's text goes to `Options.from_flags`, which
converts it (an error names the flag), and the commands hand the Options to `load_config`.
"""

from __future__ import annotations

import argparse
import dataclasses

from kmirror.config.dialects.options import Options

__all__ = ["add_config_arguments", "options_from"]


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """Add every option's flag (the values stay text until options_from converts them)."""
    group = parser.add_argument_group("configuration (MirrorMaker 1, MirrorMaker 2 or KUDO)")
    for field in dataclasses.fields(Options):
        meta = field.metadata
        names = [meta["flag"], *meta["aliases"]]
        if field.default is False:  # a switch
            group.add_argument(*names, dest=field.name, action="store_true", help=meta["help"])
        else:
            group.add_argument(*names, dest=field.name, metavar=meta["metavar"], help=meta["help"])


def options_from(args: argparse.Namespace) -> Options:
    """The configuration options of a parsed command line (other flags are left out)."""
    return Options.from_flags(vars(args))

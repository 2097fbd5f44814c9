"""`kmirror run`."""

from __future__ import annotations

import argparse
import logging

from kmirror.app.supervisor import run_mirror
from kmirror.cli.flags import options_from
from kmirror.config.dialects.loader import load_config
from kmirror.config.model import MirrorConfig
from kmirror.logsetup import configure_for
from kmirror.mirror.stream import DEFAULT_TUNING, Tuning

log = logging.getLogger("kmirror")


def run(args: argparse.Namespace, tuning: Tuning = DEFAULT_TUNING) -> int:
    return start(load_config(options_from(args)), tuning)


def start(config: MirrorConfig, tuning: Tuning = DEFAULT_TUNING) -> int:
    """Run the mirror with a loaded configuration (`kmirror run`, the container entrypoint)."""
    configure_for(config)
    for note in config.notes:
        log.warning("config: %s", note)
    log.info(
        "mirroring dialect=%s source=%s target=%s group=%s streams=%d",
        config.dialect,
        config.source.bootstrap_servers,
        config.target.bootstrap_servers,
        config.group_id,
        config.num_streams,
    )
    return run_mirror(config, tuning)

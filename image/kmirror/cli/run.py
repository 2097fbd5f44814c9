"""`kmirror run`."""

from __future__ import annotations

import argparse
import logging
import signal

from kmirror.app.reload import ConfigSource
from kmirror.app.supervisor import run_mirror
from kmirror.cli.flags import options_from
from kmirror.config import env as envvars
from kmirror.config.dialects.loader import load_config
from kmirror.config.model import MirrorConfig
from kmirror.config.values import parse_bool
from kmirror.logsetup import configure_for
from kmirror.mirror.stream import DEFAULT_TUNING, Tuning

log = logging.getLogger("kmirror")


def run(args: argparse.Namespace, tuning: Tuning = DEFAULT_TUNING) -> int:
    # Until the supervisor relays SIGHUP to a reload: a hangup now must not end the start (the
    # configuration is being read anyway).
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    options = options_from(args)
    config = load_config(options)
    # A reload (SIGHUP, a changed file) loads the configuration again the same way.
    watch = options.reload_on_change or parse_bool(
        envvars.get("KMIRROR_RELOAD_ON_CHANGE"), "KMIRROR_RELOAD_ON_CHANGE"
    )
    source = ConfigSource(lambda: [load_config(options)], options.files(), watch)
    return start(config, tuning, source)


def start(
    config: MirrorConfig, tuning: Tuning = DEFAULT_TUNING, source: ConfigSource | None = None
) -> int:
    """Run the mirror with a loaded configuration (`kmirror run`, the container entrypoint);
    `source`: how to load it again on a reload (None: SIGHUP is ignored)."""
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
    return run_mirror(config, tuning, source)

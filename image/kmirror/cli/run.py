"""`kmirror run`."""

from __future__ import annotations

import argparse
import logging
import signal
from collections.abc import Sequence

from kmirror.app.reload import ConfigSource
from kmirror.app.supervisor import run_mirror
from kmirror.cli.flags import options_from
from kmirror.config import env as envvars
from kmirror.config.dialects.loader import load_flows
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
    flows = load_flows(options)  # every enabled flow of an mm2.properties, one otherwise
    # A reload (SIGHUP, a changed file) loads the configuration again the same way.
    watch = options.reload_on_change or parse_bool(
        envvars.get("KMIRROR_RELOAD_ON_CHANGE"), "KMIRROR_RELOAD_ON_CHANGE"
    )
    source = ConfigSource(lambda: load_flows(options), options.files(), watch)
    return start(flows, tuning, source)


def start(
    config: MirrorConfig | Sequence[MirrorConfig],
    tuning: Tuning = DEFAULT_TUNING,
    source: ConfigSource | None = None,
) -> int:
    """Run the mirror with a loaded configuration, one flow or several (`kmirror run`, the
    container entrypoint); `source`: how to load it again on a reload (None: SIGHUP is
    ignored)."""
    flows = [config] if isinstance(config, MirrorConfig) else list(config)
    configure_for(*flows)
    # A note about the file is in every flow's notes: said once.
    for note in dict.fromkeys(n for c in flows for n in c.notes):
        log.warning("config: %s", note)
    for c in flows:
        log.info(
            "mirroring flow=%s dialect=%s source=%s target=%s group=%s streams=%d",
            c.flow,
            c.dialect,
            c.source.bootstrap_servers,
            c.target.bootstrap_servers,
            c.group_id,
            c.num_streams,
        )
    return run_mirror(flows, tuning, source)

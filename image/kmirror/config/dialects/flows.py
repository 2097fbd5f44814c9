"""Several flows in one mirror: which flows of an mm2.properties run, and what they must share.

MirrorMaker 2 runs every enabled flow of its file (`A->C` and `B->C`, or two-way `A->B` and
`B->A`) in one process: its multi-cluster mode. So does `kmirror run`, each flow with its own
streams, consumer group, progress, DR topics, throttles and `flow` metric label
(kmirror.app.supervisor). `--clusters` (MM2's: target aliases) keeps the flows into those
clusters; `--flow A->B` picks one.

Some settings belong to the process, not to a flow: the metrics port (one HTTP server), the
logging, the control API's credentials, MM2's metric names. They must be the same in every
flow, and two flows into one cluster must not share what they keep there (the progress and
control topics, named after the consumer group): either is refused before anything starts.

The commands that work on one flow (`offsets`, `failover`, `failback`, kmirror-validate) refuse
a file that runs several and ask for --flow (`one_flow`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kmirror.config.model import MirrorConfig, split_patterns
from kmirror.config.values import parse_bool
from kmirror.errors import ConfigError

# Fields of MirrorConfig that the process has once (kmirror.app.supervisor reads the first
# flow's): every flow must say the same.
PROCESS_SETTINGS = (
    "metrics_port",
    "log_level",
    "log_json",
    "log_pattern",
    "control",
    "mm2_metric_names",
    "dialect",
)
# What a flow keeps on its target cluster under its own name (MirrorConfig properties).
_TARGET_TOPICS = {
    "progress_topic": "the progress topic (progress.topic, or the consumer group's)",
    "control_topic": "the control topic (named after the consumer group)",
}


def pick_flows(
    props: Mapping[str, str],
    aliases: Sequence[str],
    path: str,
    flow: str | None,
    clusters: str | None,
) -> list[tuple[str, str]]:
    """The enabled flows `(source, target)` to run, in the order of `clusters=`; `flow`
    ("A->B", --flow) picks one, `clusters` (--clusters) keeps those into these aliases."""
    enabled = [
        (a, b)
        for a in aliases
        for b in aliases
        if a != b and parse_bool(props.get(f"{a}->{b}.enabled", "false"), f"{a}->{b}.enabled")
    ]
    for key in props:
        head = key.split(".", 1)[0]
        if "->" in head and key.endswith(".enabled") and not set(head.split("->")) <= set(aliases):
            raise ConfigError(
                f"{path}: {key} names a cluster that is not in clusters={','.join(aliases)}"
            )
    names = ", ".join(f"{a}->{b}" for a, b in enabled) or "none"
    if flow:
        src, _, dst = (p.strip() for p in flow.partition("->"))
        if (src, dst) not in enabled:
            raise ConfigError(f"--flow {flow}: not an enabled flow of {path} (enabled: {names})")
        return [(src, dst)]
    if clusters:
        wanted = set(split_patterns(clusters))
        unknown = sorted(wanted - set(aliases))
        if unknown:
            raise ConfigError(
                f"--clusters {clusters}: {', '.join(unknown)} not in clusters="
                f"{','.join(aliases)} of {path}"
            )
        enabled = [(a, b) for a, b in enabled if b in wanted]
        if not enabled:
            raise ConfigError(
                f"--clusters {clusters}: no enabled flow of {path} targets these clusters "
                f"(enabled: {names})"
            )
    if not enabled:
        raise ConfigError(
            f"{path}: no replication flow is enabled: set e.g. "
            f"{aliases[0]}->{aliases[1]}.enabled=true"
        )
    return enabled


def check_flows(flows: Sequence[MirrorConfig]) -> None:
    """Refuse flows that cannot run in one process: a process setting that differs, two flows
    of the same name, or two flows keeping their progress or control in one topic."""
    names = [c.flow for c in flows]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(f"the flow {', '.join(twice)} is configured twice: run it once")
    first = flows[0]
    for name in PROCESS_SETTINGS:
        others = [c.flow for c in flows[1:] if getattr(c, name) != getattr(first, name)]
        if others:
            raise ConfigError(
                f"{name} differs between the flows {first.flow} and {', '.join(others)}: it is "
                "a setting of the whole kmirror process (one metrics port, one log, one "
                "control API): give every flow the same"
            )
    for prop, what in _TARGET_TOPICS.items():
        seen: dict[tuple[frozenset[str], str], str] = {}
        for c in flows:
            key = (c.target.servers, getattr(c, prop))
            if key in seen:
                raise ConfigError(
                    f"the flows {seen[key]} and {c.flow} would share {what} "
                    f"{getattr(c, prop)!r} on {c.target.alias}: give each flow its own consumer "
                    "group (<source alias>.consumer.group.id, or drop --group-id) and, if set, "
                    "its own <A>-><B>.progress.topic"
                )
            seen[key] = c.flow


def one_flow(flows: Sequence[MirrorConfig], command: str = "this command") -> MirrorConfig:
    """The only flow, for a command that works on one; several: refused, naming them."""
    if len(flows) == 1:
        return flows[0]
    names = ", ".join(c.flow for c in flows)
    raise ConfigError(
        f"the configuration runs several flows ({names}); {command} works on one flow: "
        "choose it with --flow A->B"
    )

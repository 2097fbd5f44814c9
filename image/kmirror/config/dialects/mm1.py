"""MirrorMaker 1 dialect: `--consumer.config`, `--producer.config`, `--whitelist` & co.

The consumer file describes the source cluster (bootstrap.servers, group.id, consumer
settings), the producer file the target. Security settings go to both clusters' `common`
part so the admin clients (topic creation, config sync) authenticate like the consumer and
producer do.
"""

from __future__ import annotations

from kmirror.config.dialects.properties import PropertiesFile, load_properties
from kmirror.config.javaclient.translate import Translation, translate
from kmirror.config.model import (
    DEFAULT_NUM_STREAMS,
    DEFAULT_OFFSET_COMMIT_INTERVAL_MS,
    ClusterConfig,
    MirrorConfig,
    TopicSelection,
    split_patterns,
)
from kmirror.config.values import parse_int, unrendered
from kmirror.errors import ConfigError

# MirrorMaker command-line options people put into the client files (seed: producer.properties
# with offset.commit.interval.ms). Java ignores them there with a warning; applying the value
# is what the user meant, and the note tells them where it belongs.
_COMMIT = "offset.commit.interval.ms"


def load_mm1(
    consumer_config: str | PropertiesFile | None,
    producer_config: str | PropertiesFile | None,
    *,
    whitelist: str | None,
    blacklist: str | None = None,
    num_streams: int | None = None,
    offset_commit_interval_ms: int | None = None,
    abort_on_send_failure: bool | None = None,
    group_id: str | None = None,
) -> MirrorConfig:
    """Build the model from MirrorMaker 1 options (already parsed from flags). The client
    configurations are file paths, or files already in memory (the entrypoint's). `group_id`
    (--group-id) replaces the consumer file's group.id."""
    if not consumer_config or not producer_config:
        missing = " and ".join(
            f
            for f, v in (
                ("--consumer.config", consumer_config),
                ("--producer.config", producer_config),
            )
            if not v
        )
        raise ConfigError(
            f"MirrorMaker 1 mode needs {missing}: --consumer.config FILE names the source "
            "cluster (bootstrap.servers, group.id), --producer.config FILE the target"
        )
    if not whitelist or not whitelist.strip():
        raise ConfigError(
            "--whitelist REGEX is required (as in MirrorMaker 1): e.g. --whitelist 'orders|"
            "payments', or --whitelist '.*' to mirror every topic"
        )
    notes: list[str] = []
    cwhere, pwhere = f"consumer config {consumer_config}", f"producer config {producer_config}"
    consumer_props = _read(consumer_config, cwhere)
    producer_props = _read(producer_config, pwhere)

    commit_ms = offset_commit_interval_ms
    for props, where in ((consumer_props, cwhere), (producer_props, pwhere)):
        if _COMMIT not in props:
            continue
        value = parse_int(props.pop(_COMMIT), f"{_COMMIT} in {where}", minimum=1)
        if offset_commit_interval_ms is not None:
            notes.append(
                f"{where}: {_COMMIT}={value} ignored: --{_COMMIT} "
                f"{offset_commit_interval_ms} wins (it is a command-line option)"
            )
        else:
            commit_ms = value
            notes.append(
                f"{where}: {_COMMIT}={value} applied, but it is a MirrorMaker "
                f"command-line option, not a client property: pass --{_COMMIT} instead"
            )

    consumer = translate(consumer_props, "consumer", cwhere, security_to_common=True)
    producer = translate(producer_props, "producer", pwhere, security_to_common=True)
    notes += consumer.notes + producer.notes
    if group_id is None:
        group_id = _group_id(consumer, str(consumer_config))
    elif consumer.group_id is not None:
        notes.append(f"{cwhere}: group.id replaced by --group-id {group_id}")
    if producer.group_id is not None:
        notes.append(f"{pwhere}: group.id has no effect on a producer; ignored")
    source = _cluster("source", consumer, str(consumer_config), "source")
    target = _cluster("target", producer, str(producer_config), "target")
    # An MM1 consumer file without auto.offset.reset starts new partitions at the beginning,
    # which is what a mirror wants (nothing is skipped); "none" fails instead.
    start = consumer.start_policy or "earliest"
    return MirrorConfig(
        source=source,
        target=target,
        group_id=group_id,
        topics=TopicSelection(
            include=split_patterns(whitelist), exclude=split_patterns(blacklist or "")
        ),
        num_streams=DEFAULT_NUM_STREAMS if num_streams is None else num_streams,
        offset_commit_interval_ms=DEFAULT_OFFSET_COMMIT_INTERVAL_MS
        if commit_ms is None
        else commit_ms,
        abort_on_send_failure=True if abort_on_send_failure is None else abort_on_send_failure,
        auto_offset_reset=start,
        dialect="mm1",
        notes=tuple(notes),
    )


def _group_id(consumer: Translation, path: str) -> str:
    if consumer.group_id is None:
        raise ConfigError(
            f"consumer config {path} has no group.id: MirrorMaker 1 needs one (the consumer "
            "group whose committed offsets record how far the mirror got); add group.id=NAME "
            "or pass --group-id"
        )
    if not consumer.group_id:
        raise ConfigError(f"consumer config {path}: group.id is empty: set group.id=NAME")
    return consumer.group_id


def _cluster(alias: str, t: Translation, path: str, side: str) -> ClusterConfig:
    if not t.bootstrap_servers:
        raise ConfigError(
            f"{path} has no bootstrap.servers: set the {side} cluster's host:port[,host:port]"
        )
    return ClusterConfig(
        alias=alias,
        bootstrap_servers=t.bootstrap_servers,
        common=t.common,
        consumer=t.consumer,
        producer=t.producer,
        admin=t.admin,
    )


def _read(config: str | PropertiesFile, where: str) -> dict[str, str]:
    if isinstance(config, PropertiesFile):
        return dict(config.props)
    props = load_properties(config)
    unrendered(props, where)
    return props

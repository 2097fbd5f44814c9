"""What a target's refusal of transactions (or a fencing) means, for both exactly-once paths
(librdkafka's transactional producers and the batch path's own sessions: their error codes are
Kafka's).

A refusal at `init_transactions` (InitProducerId) names the setting or the grant that fixes
it, and says that nothing was committed: the mirror stops before copying anything under
exactly-once."""

from __future__ import annotations

from confluent_kafka import KafkaError

from kmirror.config.exactly_once import TIMEOUT_KEY
from kmirror.config.model import MirrorConfig
from kmirror.errors import ClusterError, ConfigError, KmirrorError
from kmirror.partitions import SourcePartition

# What both paths log when the coordinator refuses a partition's producer epoch (a fencing
# error): another stream initialised its transactional id, or the coordinator timed its
# transaction out (the target did not answer for transaction.timeout.ms; the epoch is bumped
# the same way, and librdkafka reports both as fenced). The partition is dropped; the stream
# takes it back when the group still gives it to it (kmirror.mirror.subscription, take_back).
FENCED_LOG = (
    "exactly-once: %s[%d] was fenced (another stream owns it now, or the target timed its "
    "transaction out); its open transaction is aborted, nothing of it becomes visible. "
    "Dropping the partition"
)
# How long a transactional producer's initialisation (InitProducerId, the coordinator
# aborting a previous owner's transaction) or an abort may take.
INIT_TIMEOUT_S = 60.0


def refused(config: MirrorConfig, key: SourcePartition, code: int, text: str) -> KmirrorError:
    """The error for a target that refused to initialise a partition's transactional producer
    (both paths: librdkafka's and the batch path's error codes are Kafka's)."""
    where = f"{key[0]}[{key[1]}] (transactional.id {config.transactional_id(*key)})"
    if code == KafkaError.INVALID_TRANSACTION_TIMEOUT:
        return ConfigError(
            f"exactly-once: the target refused transactions for {where}: {text}. The "
            f"producer's {TIMEOUT_KEY} ({config.transaction_timeout_ms()}) is above "
            "the target broker's transaction.max.timeout.ms: lower transaction.timeout.ms "
            "in the producer config (and offset.commit.interval.ms below it) or raise "
            "transaction.max.timeout.ms on the target brokers. Nothing was committed"
        )
    if code in (
        KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        KafkaError.CLUSTER_AUTHORIZATION_FAILED,
    ):
        return ClusterError(
            f"exactly-once: not authorized to use transactions on the target for {where}: "
            f"{text}. Grant WRITE and DESCRIBE on transactional ids "
            f"'kmirror-{config.group_id}-' (prefixed) and IDEMPOTENT_WRITE on the "
            "cluster. Nothing was committed"
        )
    return ClusterError(
        f"exactly-once: could not initialise the transactional producer for {where}: "
        f"{text}. Does the target support transactions (Kafka >= 0.11, enough brokers "
        "for transaction.state.log.replication.factor)? Nothing was committed"
    )

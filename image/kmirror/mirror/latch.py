"""The failure latch: what Kafka callbacks and responses reported, and what the loop does about it.

Callbacks never raise (they run inside librdkafka's poll); they record here, and the stream's
loop asks `decide()` at safe points. The rules:

- a fatal error (client, consumer, start-up of a partition) stops the mirror;
- a send failure the target will repeat whatever we do (record too large, not authorized) is
  *permanent*: it stops the mirror in both modes, because retrying loops forever and skipping
  loses the record;
- any other send failure stops the mirror with abort.on.send.failure=true, and asks for a
  rewind (re-send everything since the last commit) with false;
- while anything is recorded, or after the loop stopped on an error, nothing is committed.

Pure: no client, no I/O, unit-tested without a broker.
"""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka import KafkaError

from kmirror.errors import ClusterError, KmirrorError, MirrorError, SendError, SourceTrimmedError

# The target refuses these records whatever we do: retrying (abort.on.send.failure=false)
# would loop forever, skipping them would lose them. They stop the mirror in both modes.
PERMANENT_SEND_ERRORS = frozenset(
    {
        KafkaError.MSG_SIZE_TOO_LARGE,
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.CLUSTER_AUTHORIZATION_FAILED,
    }
)
_AUTH = (KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED)


@dataclass(frozen=True, slots=True)
class SendFailure:
    topic: str
    partition: int
    error: KafkaError
    size: int  # key + value bytes, for the "too large" hint
    batch: bool = False  # a whole record batch (the batch path), not one record

    @property
    def permanent(self) -> bool:
        return self.error.code() in PERMANENT_SEND_ERRORS


class FailureLatch:
    def __init__(self, abort_on_send_failure: bool = True) -> None:
        self.abort_on_send_failure = abort_on_send_failure
        self.failures: list[SendFailure] = []
        self.fatal: KmirrorError | None = None
        # Set once the loop stops on an error: a commit from then on (e.g. the revocation
        # callback inside consumer.close()) could cover records that were consumed but never
        # produced or acknowledged.
        self.no_commit = False

    # -- recording (callbacks) ----------------------------------------------------------------

    def send_failed(
        self, topic: str, partition: int, error: KafkaError, size: int = 0, *, batch: bool = False
    ) -> None:
        self.failures.append(SendFailure(topic, partition, error, size, batch))

    def stop(self, error: KmirrorError) -> None:
        # The first cause wins: what follows is often its echo (a partition refused at
        # assignment is then fetched from an invalid offset and reports a reset error).
        if self.fatal is None:
            self.fatal = error

    # -- deciding (the loop) ------------------------------------------------------------------

    @property
    def recorded(self) -> bool:
        """Something the loop must act on (stop or rewind) before more is sent."""
        return bool(self.failures) or self.fatal is not None

    @property
    def blocks_commit(self) -> bool:
        return bool(self.failures) or self.fatal is not None or self.no_commit

    def decide(self) -> str | None:
        """Raise when the mirror must stop; return a description of the failed sends when the
        loop must rewind and retry; None when nothing was recorded."""
        if self.fatal is not None:
            raise self.fatal
        if not self.failures:
            return None
        self.raise_permanent()
        first = self.failures[0]
        batches = sum(f.batch for f in self.failures)
        counts = [
            f"{n} {unit}"
            for n, unit in (
                (len(self.failures) - batches, "record(s)"),
                (batches, "record batch(es)"),
            )
            if n
        ]
        detail = (
            f"{' and '.join(counts)} not acknowledged, first "
            f"{first.topic}[{first.partition}]: {first.error.str()}"
        )
        if self.abort_on_send_failure:
            raise SendError(
                f"target refused records: {detail}. No offset past them was committed; a restart "
                "resumes from the last commit (abort.on.send.failure=true)"
            )
        return detail

    def raise_permanent(self) -> None:
        permanent = [f for f in self.failures if f.permanent]
        if not permanent:
            return
        f = permanent[0]
        hint = ""
        if f.error.code() == KafkaError.MSG_SIZE_TOO_LARGE:
            hint = (
                f" The record ({f.size} bytes of key and value) is larger than the target "
                f"accepts: raise max.message.bytes of the target topic '{f.topic}' (or the "
                "target broker's message.max.bytes)."
            )
        raise SendError(
            f"target refused a record for good, {f.topic}[{f.partition}]: {f.error.str()}.{hint} "
            "Retrying cannot help and skipping it would lose it; no offset past it was "
            "committed"
        )

    def clear_failures(self) -> None:
        self.failures.clear()


# -- classifying errors the clients report -------------------------------------------------------


def client_error(err: KafkaError) -> KmirrorError | None:
    """The error a client's error_cb reports, when it must stop the mirror."""
    if err.fatal():
        return MirrorError(f"fatal client error: {err}")
    if err.code() in _AUTH:
        return ClusterError(
            f"authentication failed: {err.str()}. Check the SASL user, password file and "
            "mechanism for this cluster"
        )
    return None


def consume_error(err: KafkaError, group_id: str) -> KmirrorError | None:
    """The error a consumed message carries, when it must stop the mirror."""
    if err.code() == KafkaError._AUTO_OFFSET_RESET:
        return SourceTrimmedError(
            f"source records were deleted before they were mirrored ({err.str()}). "
            "Refusing to skip them silently. If the loss is accepted, reset the group's "
            f"offsets: kafka-consumer-groups --group {group_id} "
            "--reset-offsets --to-earliest --execute --topic <topic>"
        )
    if err.fatal():
        return MirrorError(f"fatal consumer error: {err.str()}")
    if err.code() in (KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.GROUP_AUTHORIZATION_FAILED):
        return ClusterError(f"not authorized on the source: {err.str()}")
    return None

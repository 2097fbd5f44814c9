"""The record copier: every fetched record handed to a confluent-kafka producer, as it is.

Same key, value (null tombstones kept), headers (order and duplicate keys kept), CreateTime
timestamp and, with --partitioning same, partition number. The delivery callback never raises:
failures go to the latch, the stream's loop acts on them.

Progress: a delivery report names the target offset of each record, and per target partition
reports arrive in send order (idempotent producer). So the copier keeps, per target partition,
the source offsets in flight as runs of consecutive offsets, pairs each report with the oldest,
and coalesces the acknowledgements into runs for the progress book; `flush()` settles them into
the book. After a clean flush everything the consumer delivered is on the target, so the book
also moves to the consumer's position: that covers what was never copied (transaction markers,
aborted records) and, with --partitioning hash (a source partition's records land in many target
partitions, there is no source->target run to keep), everything.

It has the `Copier` shape (kmirror.mirror.contract) the stream's loop drives; the batch copier
has the same shape, so a stream runs either engine. The delivery guarantee is a constructor
argument (kmirror.mirror.guarantee): its record-path part (record_guarantee.py,
record_transactions.py) says which producer a partition's records go through (at-least-once
one idempotent producer, exactly-once the partition's transactional one). What goes wrong is
recorded in the latch and the step returns: the stream's loop decides (stop, or rewind and
send again).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import (
    TIMESTAMP_NOT_AVAILABLE,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)

from kmirror.control.gate import Gate
from kmirror.errors import SendError, TopicError
from kmirror.kafka.connect import await_metadata
from kmirror.kafka.message import position
from kmirror.mirror import latch as rules
from kmirror.mirror.contract import CopierContext, Guarantee
from kmirror.mirror.gating import RecordGate
from kmirror.mirror.provenance import stamp
from kmirror.partitions import SourcePartition
from kmirror.progress.book import PartitionBook

log = logging.getLogger(__name__)

LATENCY_SAMPLE_MASK = 0xF  # observe one acknowledged record in 16


class _InFlight:
    """One target partition: source offsets in flight (send order), acknowledgements not yet
    settled into the book (one run: source s.., target t.., n records)."""

    __slots__ = ("book", "n", "runs", "s", "t")

    def __init__(self, book: PartitionBook) -> None:
        self.book = book
        self.runs: deque[list[int]] = deque()  # [first source offset, count]
        self.s = self.t = self.n = 0

    def settle(self) -> None:
        if self.n:
            self.book.acknowledge(self.s, self.t, self.n, self.s + self.n)
        self.n = 0


class RecordCopier:
    def __init__(self, ctx: CopierContext, guarantee: Guarantee) -> None:
        config = ctx.config
        self._config = config
        self._consumer = ctx.consumer
        self._metrics = ctx.metrics
        self._latch = ctx.latch
        self._book = ctx.book
        self._stop = ctx.stop
        self._targets = ctx.targets  # the subscription's live map: source topic -> target topic
        self._client_errors = ctx.client_errors
        self._batch = ctx.consume_batch
        self.consume_timeout_s = ctx.consume_timeout_s  # the hybrid engine lowers it
        self._same = config.keeps_partitions
        rename = config.rename
        self._origin = (
            (rename.source_alias.encode(), rename.target_alias.encode())
            if config.dr.provenance_header
            else None
        )
        self._acked = 0
        self.consumed = 0  # records the last step took from the consumer (the hybrid's pace)
        # The partitions this copier copies; None: every partition the book has. The hybrid
        # engine (kmirror.mirror.hybrid) sets it: the others are on the batch path, and what
        # the consumer still delivers of them (before their pause took hold) is not copied.
        self.only: set[SourcePartition] | None = None
        # --partitioning same: per target partition, what is in flight (see the module doc).
        self._flight: dict[str, dict[int, _InFlight]] = {}
        self._flush_timeout = int(config.producer_conf().get("message.timeout.ms", "60000")) / 1e3
        # Inside consume(): the group's callbacks run there, and the consumer's position may
        # already cover records of the batch that consume() has not handed to us yet.
        self._consuming = False
        self.guarantee = guarantee
        self._delivery = guarantee.record
        self.producer = self._delivery.attach(ctx, self._on_delivery, self._forget)
        # Paused topics, drains, throttles (kmirror.mirror.gating).
        self._gating = RecordGate(ctx.gate or Gate(), ctx.consumer)
        self._schemas = ctx.schemas

    # -- the Copier shape ----------------------------------------------------------------------

    def connect(self, deadline: float) -> None:
        await_metadata(
            self.producer,
            lambda: self.producer.poll(0),
            self._client_errors,
            deadline,
            "target",
            self._config.target.bootstrap_servers,
        )

    def assign(self, starts: Mapping[SourcePartition, int]) -> None:
        """The consumer's assignment already starts at these offsets."""

    def revoke(self, keys: Iterable[SourcePartition]) -> None:
        keys = list(keys)
        self._forget(keys)
        self._delivery.release(keys)

    def _forget(self, keys: list[SourcePartition]) -> None:
        self._gating.forget(keys)
        busy = False
        for topic, partition in keys:
            per = self._flight.get(self._target(topic))
            flight = per.pop(partition, None) if per is not None else None
            busy = busy or bool(flight is not None and flight.runs)
        if busy:
            # Lost partitions (no commit before): their reports must arrive before a new
            # owner's flight of the same partition could pair with them.
            self.producer.flush(self._flush_timeout)

    def step(self) -> None:
        gating = self._gating
        if gating.busy():
            gating.regate(self.only if self.only is not None else set(self._book.keys()))
        msgs = self._next_batch()
        if msgs and gating.active:
            msgs = gating.admit(msgs)
        self.consumed = len(msgs)
        if msgs:
            self._copy(msgs)
        self._delivery.poll()
        self._delivery.drop_fenced()

    def hold_back(self, on: bool) -> None:
        """Nothing to hold back: the record path hands each record to its producer as read."""

    def flush(self, timeout: float) -> int:
        remaining = self._delivery.flush(timeout)
        if not remaining and not self._latch.failures:
            self._settle()
        return remaining

    def _settle(self) -> None:
        """Everything handed was acknowledged: report it to the book."""
        for per in self._flight.values():
            for flight in per.values():
                flight.settle()
        parts = [(k, b) for k, b in self._book.items() if self.only is None or k in self.only]
        if not parts or self._consuming:
            return
        asked = [TopicPartition(t, p) for (t, p), _ in parts]
        for tp, (key, book) in zip(self._consumer.position(asked), parts, strict=True):
            if tp.offset >= 0:
                book.skip(self._gating.clamp(key, tp.offset))

    def rewind(self, positions: Mapping[SourcePartition, int]) -> None:
        # Called after a flush: nothing is in flight. What failed is forgotten unsettled; the
        # stream rewinds the book, and everything from `positions` is sent (and reported) again
        # (exactly-once: in new transactions, the open ones aborted first).
        self._delivery.abort()
        self._flight.clear()
        positions = {k: o for k, o in positions.items() if self._delivery.owns(k)}
        for (topic, partition), offset in positions.items():
            self._consumer.seek(TopicPartition(topic, partition, offset))
        self._gating.rewound(positions)

    def close(self, timeout: float) -> None:
        self._delivery.close(timeout)

    def _target(self, topic: str) -> str:
        return self._targets.get(topic) or self._config.target_topic(topic)

    # -- copying -------------------------------------------------------------------------------

    def _next_batch(self) -> list[Message]:
        """What is buffered, up to a full batch; when nothing is, wait for one record only.
        consume() returns early only once the whole batch is there, so asking for a batch
        with a timeout would hold a trickle of records back for up to the timeout."""
        self._consuming = True
        try:
            msgs = self._consumer.consume(self._gating.batch(self._batch), 0)
            return msgs or self._consumer.consume(1, self.consume_timeout_s)
        finally:
            self._consuming = False

    def _copy(self, msgs: list[Message]) -> None:
        targets = self._targets
        counts: dict[str, list[int]] = {}
        same = self._same
        flights = self._flight
        latch = self._latch
        delivery = self._delivery
        source: SourcePartition | None = None
        producer: Producer | None = None
        origin = self._origin
        schemas = self._schemas
        # MM2's record age (--mm2-metric-names): when read, per target partition, which only
        # --partitioning same knows before the target acknowledges.
        figures = self._metrics.partitions if same else None
        read_at = time.time()
        for m in msgs:
            err = m.error()
            if err is not None:
                self._consume_error(err)
                continue
            topic, partition, offset = position(m)
            if source != (topic, partition):
                source = (topic, partition)
                producer = delivery.producer_for(source)
            if producer is None:
                continue  # not ours to copy (exactly-once: fenced, or revoked meanwhile)
            dst = targets.get(topic) or self._config.target_topic(topic)
            key, value = m.key(), m.value()
            if schemas is not None:
                key, value = schemas.record(key, value, topic, partition, offset)
            ts_type, ts = m.timestamp()
            headers = m.headers()
            if origin is not None:  # opt-in provenance header (kmirror/mirror/provenance.py)
                headers = stamp(headers, *origin)
                if headers is None:
                    continue  # it came from the target: copying it back would loop
            kwargs: dict[str, Any] = {
                "key": key,
                "value": value,
                "headers": headers,
                "timestamp": ts if ts_type != TIMESTAMP_NOT_AVAILABLE else 0,
            }
            flight: _InFlight | None = None
            if same:
                kwargs["partition"] = partition
                per = flights.get(dst)
                if per is None:
                    per = flights[dst] = {}
                flight = per.get(partition)
                if flight is None:
                    if self.only is not None and (topic, partition) not in self.only:
                        continue  # on the batch path (kmirror.mirror.hybrid)
                    book = self._book.get(topic, partition)
                    if book is None:
                        # Revoked while consume() gathered this batch: the new owner copies
                        # it from the last commit.
                        continue
                    flight = per[partition] = _InFlight(book)
                if figures is not None and ts_type != TIMESTAMP_NOT_AVAILABLE and ts > 0:
                    figures.read(dst, partition, max(read_at - ts / 1000.0, 0.0))
            halted = False
            while True:
                try:
                    producer.produce(dst, **kwargs)
                    break
                except BufferError:
                    # Local queue full: serve acknowledgements until there is room.
                    producer.poll(0.05)
                    halted = latch.recorded
                    if halted:
                        break
                except KafkaException as exc:
                    code = exc.args[0].code()
                    if code == KafkaError.MSG_SIZE_TOO_LARGE:
                        raise self._too_large(m, exc) from exc
                    if delivery.fencing(source, exc.args[0]):
                        producer = None  # dropped at the end of the step
                        break
                    if code == KafkaError._STATE:
                        # Exactly-once: the transaction failed as a whole (its sends timed out
                        # or were refused), so its producer takes nothing until the stream's
                        # rewind aborts it. The failed sends' reports may still be queued:
                        # served now, they put the failure in the latch; if they do not, the
                        # refusal itself is this record's failed send (a rewind, or a stop with
                        # abort.on.send.failure=true), never a crash of the stream.
                        producer.poll(0)
                        if not latch.recorded:
                            latch.send_failed(dst, kwargs.get("partition", -1), exc.args[0])
                        halted = True
                        break
                    if code != KafkaError._UNKNOWN_PARTITION:
                        raise
                    self._await_partition(producer, dst, partition)
            if halted:
                # A send failed meanwhile: the stream stops or rewinds, and the rest of this
                # batch comes again from the last commit. Sending it now would acknowledge
                # records past the failed ones.
                break
            if producer is None:
                continue
            # Recorded once produce() took the record: its report will come, in this order.
            if flight is not None:
                runs = flight.runs
                if runs and runs[-1][0] + runs[-1][1] == offset:
                    runs[-1][1] += 1
                else:
                    runs.append([offset, 1])
            c = counts.get(dst)
            if c is None:
                c = counts[dst] = [0, 0]
            c[0] += 1
            c[1] += (len(key) if key else 0) + (len(value) if value else 0)
        for dst, (n, nbytes) in counts.items():
            self._metrics.records.labels(dst).inc(n)
            self._metrics.bytes.labels(dst).inc(nbytes)

    def _consume_error(self, err: KafkaError) -> None:
        stop = rules.consume_error(err, self._config.group_id)
        if stop is not None:
            self._latch.stop(stop)
        else:
            log.warning("consume error: %s", err.str())

    def _too_large(self, m: Message, exc: KafkaException) -> SendError:
        size = len(m.key() or b"") + len(m.value() or b"")
        limit = self._config.producer_conf().get("message.max.bytes", "1000000")
        return SendError(
            f"record {m.topic()}[{m.partition()}] offset {m.offset()} ({size} bytes of key and "
            f"value) is larger than the producer's message.max.bytes ({limit}): {exc.args[0]}. "
            "Raise message.max.bytes (Java: max.request.size) in the producer config and "
            "max.message.bytes of the target topic. Nothing past it was committed"
        )

    def _await_partition(self, producer: Producer, topic: str, partition: int | None) -> None:
        """The producer's metadata predates a partition we just added: refresh it (bounded)."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not self._stop.is_set():
            md = producer.list_topics(topic, timeout=10)
            t = md.topics.get(topic)
            if t is not None and partition is not None and partition in t.partitions:
                return
            self._stop.wait(0.5)
        raise TopicError(
            f"target topic '{topic}' has no partition {partition} after 30 s: add partitions "
            "on the target or run with --partitioning hash"
        )

    # -- the delivery callback: never raises ---------------------------------------------------

    def _on_delivery(self, err: KafkaError | None, msg: Message) -> None:
        source = -1
        flight = None
        topic, partition, target = position(msg)
        if self._same:
            per = self._flight.get(topic)
            flight = per.get(partition) if per is not None else None
            if flight is not None and flight.runs:
                run = flight.runs[0]
                source = run[0]
                run[0] += 1
                run[1] -= 1
                if not run[1]:
                    flight.runs.popleft()
        if err is not None:
            size = len(msg.key() or b"") + len(msg.value() or b"")
            self._latch.send_failed(topic, partition, err, size)
            self._metrics.send_errors.labels(err.name()).inc()
            return
        if source >= 0 and flight is not None:
            n = flight.n
            if n and source == flight.s + n and target == flight.t + n:
                flight.n = n + 1
            else:
                flight.settle()
                flight.s, flight.t, flight.n = source, target, 1
        self._acked += 1
        figures = self._metrics.partitions
        if figures is not None:
            # Every record (MM2's per-partition latency is not sampled): only when asked for.
            ts_type, ts = msg.timestamp()
            latency = (
                max(time.time() - ts / 1000.0, 0.0)
                if ts_type != TIMESTAMP_NOT_AVAILABLE and ts > 0
                else None
            )
            size = len(msg.key() or b"") + len(msg.value() or b"")
            figures.acknowledged(topic, partition, 1, size, latency)
        if not self._acked & LATENCY_SAMPLE_MASK:
            ts_type, ts = msg.timestamp()
            if ts_type != TIMESTAMP_NOT_AVAILABLE and ts > 0:
                self._metrics.latency.observe(max(time.time() - ts / 1000.0, 0.0))

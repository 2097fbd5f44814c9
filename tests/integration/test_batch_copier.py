"""The batch copier against the real clusters: the target partition holds exactly the source's
records (key, value, headers, timestamp and its type, order), compressed batches keep their
codec, and the progress book translates every copied source offset to where it landed."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient  # type: ignore[attr-defined]

from kmirror.errors import SendError, SourceTrimmedError
from kmirror.mirror.batch.copier import BatchCopier
from kmirror.progress.book import ProgressBook
from tests.conftest import MakeTopic
from tests.integration.batchcopy import (
    assert_translates,
    copied_exactly,
    copy_all,
    mirror_config,
    raw_batches,
)
from tests.kafkatools import (
    Clusters,
    compacted_source,
    consume_all,
    end_offsets,
    list_topics,
    produce,
)

pytestmark = pytest.mark.integration


# Recent CreateTimes: records older than the topic's retention.ms (7 days by default) may be
# deleted by the broker's next retention check, between producing and reading them back.
BASE_TIMESTAMP_MS = int(time.time() * 1000) - 3_600_000


def records(n: int, size: int = 100) -> list[dict[str, object]]:
    return [
        {
            "key": b"k%d" % i,
            "value": (b"%d-" % i).ljust(size, b"x"),
            "headers": [("h", b"%d" % i), ("h", None), ("trace", b"t")],
            "timestamp": BASE_TIMESTAMP_MS + i,
            "partition": i % 2,
        }
        for i in range(n)
    ]


def contents(bootstrap: str, topic: str) -> list[tuple[object, ...]]:
    return [r.content() for r in consume_all(bootstrap, topic)]


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_idempotent_source_copied_byte_for_byte_with_its_codec(
    clusters: Clusters, make_topic: MakeTopic, codec: str
) -> None:
    src = make_topic(clusters.source_bootstrap, partitions=2)
    dst = make_topic(clusters.target_bootstrap, name=src, partitions=2)
    produce(clusters.source_bootstrap, src, records(4000), **{"compression.type": codec})
    copied_exactly(clusters, src, dst)
    for p in (0, 1):
        codecs = {b.codec for b in raw_batches(clusters.target_bootstrap, dst, p)}
        assert codecs == {codec}


def _transactions(bootstrap: str, topic: str, plan: list[tuple[int, bool]], **conf: object) -> None:
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-tx", "linger.ms": 5, **conf}
    )
    producer.init_transactions(30)
    n = 0
    for count, commit in plan:
        producer.begin_transaction()
        for _ in range(count):
            value = b"%s-%d" % (b"committed" if commit else b"aborted", n)
            producer.produce(topic, key=b"k%d" % n, value=value, partition=n % 2)
            n += 1
        if commit:
            producer.commit_transaction(30)
        else:
            producer.flush(30)
            producer.abort_transaction(30)


def _copied_transactions(
    clusters: Clusters,
    make_topic: MakeTopic,
    plan: list[tuple[int, bool]],
    after: int = 0,
    **conf: object,
) -> tuple[str, str, ProgressBook]:
    """Transactions of `plan` (then `after` plain idempotent records) copied by the batch
    path: the committed records arrive byte for byte, no aborted one, every offset translated,
    and the whole source (markers, aborted records) acknowledged. Returns source and target
    topic and the book."""
    src = make_topic(clusters.source_bootstrap, partitions=2)
    dst = make_topic(clusters.target_bootstrap, name=src, partitions=2)
    _transactions(clusters.source_bootstrap, src, plan, **conf)
    if after:
        produce(clusters.source_bootstrap, src, records(after))
    book, source, target = copied_exactly(clusters, src, dst)
    assert len(source) == sum(n for n, commit in plan if commit) + after
    assert not [r for r in target if r.value and r.value.startswith(b"aborted")]
    assert {p: book[(src, p)].acked for p in (0, 1)} == end_offsets(clusters.source_bootstrap, src)
    return src, dst, book


def test_transactional_source_copies_committed_and_skips_aborted(
    clusters: Clusters, make_topic: MakeTopic
) -> None:
    _copied_transactions(clusters, make_topic, [(300, True), (200, False), (300, True)], 100)


def test_compacted_source_copies_dense_batches_and_hands_the_rest_to_the_record_path(
    clusters: Clusters, make_topic: MakeTopic
) -> None:
    src = compacted_source(clusters.source_bootstrap, make_topic)
    dst = make_topic(clusters.target_bootstrap, name=src)
    config = mirror_config(clusters.source_bootstrap, clusters.target_bootstrap)
    book, fallbacks = copy_all(config, clusters.source_bootstrap, src, dst)
    source = consume_all(clusters.source_bootstrap, src)
    target = consume_all(clusters.target_bootstrap, dst)
    fallback = fallbacks.get((src, 0))
    assert fallback is not None and "compacted" in fallback.reason
    # Everything before the hand-over is on the target, exactly; nothing after it.
    before = [r for r in source if r.offset < fallback.offset]
    assert len(before) >= 100
    assert [r.content() for r in target] == [r.content() for r in before]
    assert book[(src, 0)].acked == fallback.offset
    assert_translates(book, src, before, target)
    # The dense batches of 5 before it were merged (whole batches the cleaner removed, if
    # any, started a new merged batch: the book's runs above are exact either way). Until the
    # target topic's limit is read the first few go one by one (up to five in flight).
    stored = raw_batches(clusters.target_bootstrap, dst, 0)
    dense = [
        b for b in raw_batches(clusters.source_bootstrap, src, 0) if b.base_offset < fallback.offset
    ]
    assert len(stored) <= len(dense) // 2, (len(stored), len(dense))


SMALL = {"linger.ms": 0, "batch.num.messages": 5}  # 5-record source batches, as linger 0 makes


def keyed(n: int) -> list[dict[str, object]]:
    """Records with keys (some null), headers (repeated, null values) and tombstones."""
    return [
        {
            "key": None if i % 13 == 7 else b"key-%d" % (i % 50),
            "value": None if i % 17 == 3 else (b"%d-" % i).ljust(80 + i % 40, b"v"),
            "headers": [("h", b"%d" % i), ("h", None)] if i % 3 else [],
            "timestamp": BASE_TIMESTAMP_MS + (i * 7) % 100,  # not monotonic: negative deltas
            "partition": i % 2,
        }
        for i in range(n)
    ]


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_small_source_batches_are_merged_byte_for_byte_with_their_codec(
    clusters: Clusters, make_topic: MakeTopic, codec: str
) -> None:
    src = make_topic(clusters.source_bootstrap, partitions=2)
    dst = make_topic(clusters.target_bootstrap, name=src, partitions=2)
    produce(clusters.source_bootstrap, src, keyed(1200), **SMALL, **{"compression.type": codec})
    _, source, _ = copied_exactly(clusters, src, dst)
    assert len(source) == 1200
    for p in (0, 1):
        before = raw_batches(clusters.source_bootstrap, src, p)
        after = raw_batches(clusters.target_bootstrap, dst, p)
        assert max(b.record_count for b in before) <= 5
        assert len(after) < len(before) // 4, (len(after), len(before))  # merged
        assert {b.codec for b in after} == {codec}


def test_small_transactional_batches_are_merged_between_markers_and_aborted_records(
    clusters: Clusters, make_topic: MakeTopic
) -> None:
    plan = [(60, True), (40, False), (60, True), (30, True), (50, False), (60, True)]
    # Each merged batch is one run of consecutive source offsets: markers and aborted
    # records between transactions start a new one, and the book translates every offset.
    src, dst, book = _copied_transactions(clusters, make_topic, plan, **SMALL)
    for p in (0, 1):
        copied = [b for b in raw_batches(clusters.source_bootstrap, src, p) if not b.is_control]
        stored = raw_batches(clusters.target_bootstrap, dst, p)
        assert len(stored) < len(copied) // 3, (len(stored), len(copied))
        assert len(book[(src, p)].runs) >= 4  # one per committed transaction at least


def test_merged_batches_stay_within_the_target_topics_max_message_bytes(
    clusters: Clusters, make_topic: MakeTopic
) -> None:
    src = make_topic(clusters.source_bootstrap, partitions=2)
    dst = make_topic(
        clusters.target_bootstrap, name=src, partitions=2, config={"max.message.bytes": "8000"}
    )
    produce(clusters.source_bootstrap, src, keyed(1200), **SMALL)
    copied_exactly(clusters, src, dst)
    stored = raw_batches(clusters.target_bootstrap, dst, 0)
    assert max(len(b.data) for b in stored) <= 8000
    assert max(b.record_count for b in stored) > 5  # merged all the same


def test_batch_above_the_targets_max_message_bytes_stops_with_a_clear_error(
    clusters: Clusters, make_topic: MakeTopic
) -> None:
    src = make_topic(clusters.source_bootstrap)
    dst = make_topic(clusters.target_bootstrap, name=src, config={"max.message.bytes": "20000"})
    produce(clusters.source_bootstrap, src, [{"key": b"a", "value": b"small"}] * 10)
    big = produce(clusters.source_bootstrap, src, [{"key": b"b", "value": b"x" * 60_000}])
    produce(clusters.source_bootstrap, src, [{"key": b"c", "value": b"after"}] * 10)
    book = ProgressBook()
    copier = BatchCopier(mirror_config(clusters.source_bootstrap, clusters.target_bootstrap), book)
    copier.assign({(src, 0): (dst, 0)})
    try:
        with pytest.raises(SendError, match=r"max\.message\.bytes") as err:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                copier.step(0.1)
        assert "MESSAGE_TOO_LARGE" in str(err.value) or "RECORD_LIST_TOO_LARGE" in str(err.value)
    finally:
        copier.close()
    big_offset = big[0][1]
    assert book[(src, 0)].acked == big_offset  # nothing acknowledged past the refused batch
    target = consume_all(clusters.target_bootstrap, dst)
    assert [r.value for r in target] == [b"small"] * 10


def test_records_deleted_before_they_were_copied_stop_the_copy(
    clusters: Clusters, make_topic: MakeTopic
) -> None:
    src = make_topic(clusters.source_bootstrap)
    dst = make_topic(clusters.target_bootstrap, name=src)
    produce(clusters.source_bootstrap, src, [{"key": b"k", "value": b"v"}] * 50)
    admin = AdminClient({"bootstrap.servers": clusters.source_bootstrap})
    admin.delete_records([TopicPartition(src, 0, 20)])[TopicPartition(src, 0, 20)].result(30)
    copier = BatchCopier(
        mirror_config(clusters.source_bootstrap, clusters.target_bootstrap), ProgressBook()
    )
    copier.assign({(src, 0): (dst, 0)})
    try:
        with pytest.raises(SourceTrimmedError, match="deleted before they were mirrored"):
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                copier.step(0.1)
    finally:
        copier.close()
    assert consume_all(clusters.target_bootstrap, dst) == []


def test_log_append_time_source_is_handed_to_the_record_path(
    clusters: Clusters, make_topic: MakeTopic
) -> None:
    # Kafka 4.1 takes a LogAppendTime batch from a producer but stores it as CreateTime with
    # the producers' own timestamps: not what the source's readers see.
    src = make_topic(clusters.source_bootstrap, config={"message.timestamp.type": "LogAppendTime"})
    dst = make_topic(clusters.target_bootstrap, name=src)
    produce(clusters.source_bootstrap, src, [{"key": b"k", "value": b"v"}] * 20)
    config = mirror_config(clusters.source_bootstrap, clusters.target_bootstrap)
    book, fallbacks = copy_all(config, clusters.source_bootstrap, src, dst)
    assert fallbacks[(src, 0)].offset == 0
    assert "LogAppendTime" in fallbacks[(src, 0)].reason
    assert book[(src, 0)].acked == 0
    assert consume_all(clusters.target_bootstrap, dst) == []


def test_a_start_inside_a_batch_is_handed_to_the_record_path(
    clusters: Clusters, make_topic: MakeTopic
) -> None:
    src = make_topic(clusters.source_bootstrap)
    dst = make_topic(clusters.target_bootstrap, name=src)
    rows = [{**r, "partition": 0} for r in records(10, size=20)]
    first = produce(clusters.source_bootstrap, src, rows, linger_ms=100)
    produce(clusters.source_bootstrap, src, [{"key": b"z", "value": b"later", "partition": 0}])
    book = ProgressBook()
    copier = BatchCopier(mirror_config(clusters.source_bootstrap, clusters.target_bootstrap), book)
    mid = first[2][1]  # inside the first batch (all ten records went out in one)
    copier.assign({(src, 0): (dst, mid)})
    fallbacks = {}
    try:
        deadline = time.monotonic() + 30
        while not fallbacks and time.monotonic() < deadline:
            copier.step(0.1)
            fallbacks = copier.take_fallbacks()
    finally:
        copier.close()
    # Copying the whole batch would copy offsets before `mid` again.
    assert fallbacks[(src, 0)].offset == mid
    assert fallbacks[(src, 0)].reason == "position inside a batch"
    assert consume_all(clusters.target_bootstrap, dst) == []


def test_revoke_and_assign_again_continues_without_gap_or_duplicate(
    clusters: Clusters, make_topic: MakeTopic
) -> None:
    src = make_topic(clusters.source_bootstrap, partitions=2)
    dst = make_topic(clusters.target_bootstrap, name=src, partitions=2)
    # Far more than one step and a flush can copy: the revoke comes mid-way. (A flush sends
    # everything fetched, up to a few merged batch bounds per partition: small bounds here.)
    produce(clusters.source_bootstrap, src, records(60_000), **{"batch.num.messages": "500"})
    ends = end_offsets(clusters.source_bootstrap, src)
    book = ProgressBook()
    config = mirror_config(
        clusters.source_bootstrap,
        clusters.target_bootstrap,
        source_conf={"max.partition.fetch.bytes": "65536"},
        target_conf={"batch.size": "65536"},
    )
    copier = BatchCopier(config, book)
    keys = [(src, p) for p in ends]
    try:
        copier.assign({k: (dst, 0) for k in keys})
        acked = 0
        while acked < 3_000:
            acked += copier.step(0.05)
        assert copier.flush(30)
        resume = {k: book[k].acked for k in keys}
        copier.revoke(keys)
        assert all(k not in book for k in keys)
        # Back, from where the book stood (what a commit would have saved).
        copier.assign({k: (dst, resume[k]) for k in keys})
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(book[k].acked < ends[k[1]] for k in keys):
            copier.step(0.1)
    finally:
        copier.close()
    source = consume_all(clusters.source_bootstrap, src)
    target = consume_all(clusters.target_bootstrap, dst)
    assert [r.content() for r in target] == [r.content() for r in source]
    # The second assignment's book knows the runs it copied, exactly.
    later = [
        (s, d)
        for s, d in zip(source, target, strict=True)
        if s.offset >= resume[(src, s.partition)]
    ]
    assert later
    for s, d in later:
        assert book[(src, s.partition)].translate(s.offset) == d.offset


def test_a_missing_target_topic_is_waited_for_never_created_by_the_copier(
    clusters: Clusters, make_topic: MakeTopic
) -> None:
    src = make_topic(clusters.source_bootstrap, partitions=2)
    produce(clusters.source_bootstrap, src, records(5_000))
    ends = end_offsets(clusters.source_bootstrap, src)
    book = ProgressBook()
    copier = BatchCopier(mirror_config(clusters.source_bootstrap, clusters.target_bootstrap), book)
    keys = [(src, p) for p in ends]
    try:
        copier.assign({k: (src, 0) for k in keys})
        copied = sum(copier.step(0.1) for _ in range(20))
        assert copied == 0
        # Metadata requests must not have created it with the broker's defaults.
        assert src not in list_topics(clusters.target_bootstrap)
        dst = make_topic(clusters.target_bootstrap, name=src, partitions=2)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(book[k].acked < ends[k[1]] for k in keys):
            copier.step(0.1)
    finally:
        copier.close()
    source = consume_all(clusters.source_bootstrap, src)
    target = consume_all(clusters.target_bootstrap, dst)
    assert [r.content() for r in target] == [r.content() for r in source]
    assert_translates(book, src, source, target)

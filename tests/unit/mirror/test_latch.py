"""The failure latch's rules: what stops the mirror, what rewinds it, what blocks a commit."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError

from kmirror.errors import ClusterError, MirrorError, SendError, SourceTrimmedError
from kmirror.mirror.latch import FailureLatch, client_error, consume_error

pytestmark = pytest.mark.unit


def err(code: int, fatal: bool = False) -> KafkaError:
    return KafkaError(code, "broker said no", fatal=fatal)


def test_nothing_recorded_goes_on_and_may_commit() -> None:
    latch = FailureLatch()
    assert latch.decide() is None
    assert not latch.blocks_commit


def test_retriable_failure_aborts_by_default() -> None:
    latch = FailureLatch(abort_on_send_failure=True)
    latch.send_failed("t", 3, err(KafkaError.REQUEST_TIMED_OUT))
    assert latch.blocks_commit
    with pytest.raises(SendError, match=r"1 record\(s\) not acknowledged, first t\[3\]"):
        latch.decide()


def test_retriable_failure_asks_for_a_rewind_when_not_aborting() -> None:
    latch = FailureLatch(abort_on_send_failure=False)
    latch.send_failed("t", 0, err(KafkaError.NOT_ENOUGH_REPLICAS))
    latch.send_failed("t", 1, err(KafkaError.REQUEST_TIMED_OUT))
    detail = latch.decide()
    assert detail is not None and detail.startswith("2 record(s) not acknowledged, first t[0]")
    assert latch.blocks_commit  # until the rewind cleared them
    latch.clear_failures()
    assert not latch.blocks_commit


@pytest.mark.parametrize("abort", [True, False])
def test_record_too_large_is_permanent_in_both_modes_and_names_the_fix(abort: bool) -> None:
    latch = FailureLatch(abort_on_send_failure=abort)
    latch.send_failed("t", 0, err(KafkaError.REQUEST_TIMED_OUT))
    latch.send_failed("big", 2, err(KafkaError.MSG_SIZE_TOO_LARGE), size=2_000_000)
    with pytest.raises(SendError, match=r"for good, big\[2\].*2000000 bytes.*max.message.bytes"):
        latch.decide()


@pytest.mark.parametrize(
    "code", [KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED]
)
def test_not_authorized_on_the_target_is_permanent(code: int) -> None:
    latch = FailureLatch(abort_on_send_failure=False)
    latch.send_failed("t", 0, err(code))
    with pytest.raises(SendError, match="Retrying cannot help"):
        latch.decide()


def test_a_fatal_error_wins_over_send_failures_and_blocks_commits() -> None:
    latch = FailureLatch(abort_on_send_failure=False)
    latch.send_failed("t", 0, err(KafkaError.REQUEST_TIMED_OUT))
    latch.stop(MirrorError("boom"))
    with pytest.raises(MirrorError, match="boom"):
        latch.decide()


def test_the_first_fatal_error_is_the_one_reported() -> None:
    latch = FailureLatch()
    latch.stop(MirrorError("no committed offset and auto.offset.reset=none"))
    latch.stop(SourceTrimmedError("reset error that follows from it"))
    with pytest.raises(MirrorError, match=r"auto\.offset\.reset=none"):
        latch.decide()


def test_no_commit_after_the_loop_stopped() -> None:
    latch = FailureLatch()
    latch.no_commit = True
    assert latch.blocks_commit
    assert latch.decide() is None


def test_client_errors_that_stop_the_mirror() -> None:
    assert isinstance(client_error(err(KafkaError._FATAL, fatal=True)), MirrorError)
    auth = client_error(err(KafkaError.SASL_AUTHENTICATION_FAILED))
    assert isinstance(auth, ClusterError) and "password file" in str(auth)
    assert client_error(err(KafkaError._TRANSPORT)) is None  # librdkafka reconnects
    assert client_error(err(KafkaError._ALL_BROKERS_DOWN)) is None


def test_consume_errors_that_stop_the_mirror() -> None:
    trimmed = consume_error(err(KafkaError._AUTO_OFFSET_RESET), "grp")
    assert isinstance(trimmed, SourceTrimmedError)
    assert "kafka-consumer-groups --group grp --reset-offsets" in str(trimmed)
    denied = consume_error(err(KafkaError.GROUP_AUTHORIZATION_FAILED), "grp")
    assert isinstance(denied, ClusterError) and "not authorized on the source" in str(denied)
    assert isinstance(consume_error(err(KafkaError._FATAL, fatal=True), "grp"), MirrorError)
    assert consume_error(err(KafkaError._PARTITION_EOF), "grp") is None


def test_a_failed_batch_is_named_a_batch_not_a_record() -> None:
    latch = FailureLatch(abort_on_send_failure=False)
    latch.send_failed("t", 0, err(KafkaError.REQUEST_TIMED_OUT), batch=True)
    latch.send_failed("t", 1, err(KafkaError.REQUEST_TIMED_OUT))
    detail = latch.decide()
    assert detail is not None
    assert detail.startswith("1 record(s) and 1 record batch(es) not acknowledged, first t[0]")

"""When a partition's source batches are too small for the batch path (--engine auto)."""

from kmirror.mirror.batch.sizes import BatchSizes

KEY = ("t", 0)


def test_tiny_batches_leave_after_the_samples_and_not_before() -> None:
    sizes = BatchSizes(judge=True, threshold=40, samples=10)
    for _ in range(9):
        assert sizes.add(KEY, 5) is None
    assert sizes.add(KEY, 5) == 5.0
    assert not sizes.pays_off(KEY)


def test_large_batches_stay_and_pay_off() -> None:
    sizes = BatchSizes(judge=True, threshold=40, samples=10)
    assert all(sizes.add(KEY, 500) is None for _ in range(100))
    assert sizes.pays_off(KEY)


def test_a_backlog_of_large_batches_then_a_trickle_leaves_once_the_mean_falls() -> None:
    sizes = BatchSizes(judge=True, threshold=40, samples=10)
    for _ in range(20):
        sizes.add(KEY, 5000)
    left = [n for n in range(1, 400) if sizes.add(KEY, 1) is not None]
    assert left, "the running mean never fell below the threshold"
    assert left[0] > 10  # not at the first small batch: the mean forgets gradually


def test_only_measures_when_not_judging() -> None:
    sizes = BatchSizes(judge=False, threshold=40, samples=1)
    assert all(sizes.add(KEY, 1) is None for _ in range(100))
    assert sizes.mean(KEY) == 1.0


def test_forget_starts_a_partition_afresh() -> None:
    sizes = BatchSizes(judge=True, threshold=40, samples=3)
    for _ in range(3):
        sizes.add(KEY, 1)
    sizes.forget(KEY)
    assert sizes.mean(KEY) is None
    assert sizes.add(KEY, 1) is None  # one sample again, not three

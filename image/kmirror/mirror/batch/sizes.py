"""How many records a partition's source batches hold, and when that is too few for the batch
path (``--engine auto``).

The batch path pays per source batch (a produce round trip carries one batch per partition),
the record path per record (a producer re-batches them). Measured (docs/architecture.md, "The
batch path"): about 0.1 CPU µs per record plus 120 µs per batch on the batch path, 3-4 µs per
record on the record path, so below SMALL_BATCH_RECORDS records per batch the record path is
cheaper. Pure: no client, unit-tested without a broker.
"""

from __future__ import annotations

from dataclasses import dataclass

from kmirror.partitions import SourcePartition

SMALL_BATCH_RECORDS = 40
# Batches a partition copies before its mean is judged: enough that one odd batch does not
# decide, few enough that a partition of tiny batches leaves within its first few hundred
# records instead of at the next commit (a minute by default).
SMALL_BATCH_SAMPLES = 64
EWMA_WEIGHT = 0.05  # weight of one batch in the running mean


@dataclass
class _Mean:
    value: float
    count: int = 1


class BatchSizes:
    """Running mean of records per source batch, per partition. ``judge``: report partitions
    whose mean fell below the threshold (auto); otherwise only measure."""

    def __init__(
        self,
        *,
        judge: bool,
        threshold: float = SMALL_BATCH_RECORDS,
        samples: int = SMALL_BATCH_SAMPLES,
    ) -> None:
        self.judge = judge
        self.threshold = threshold
        self.samples = samples
        self._means: dict[SourcePartition, _Mean] = {}

    def add(self, key: SourcePartition, records: int) -> float | None:
        """One more batch of `records` copied for `key`. Returns the mean when the partition
        should leave the batch path (judged, enough samples, below the threshold)."""
        mean = self._means.get(key)
        if mean is None:
            mean = self._means[key] = _Mean(float(records))
        else:
            mean.value += EWMA_WEIGHT * (records - mean.value)
            mean.count += 1
        if self.judge and mean.count >= self.samples and mean.value < self.threshold:
            return mean.value
        return None

    def mean(self, key: SourcePartition) -> float | None:
        found = self._means.get(key)
        return None if found is None else found.value

    def pays_off(self, key: SourcePartition) -> bool:
        """Measured long enough and at or above the threshold."""
        found = self._means.get(key)
        return found is not None and found.count >= self.samples and found.value >= self.threshold

    def forget(self, key: SourcePartition) -> None:
        self._means.pop(key, None)

"""kmirror's record-batch kernel (native/kmirror-batches, Rust): merge a run of small Kafka v2
batches of one partition into one batch, optionally translating Confluent schema IDs."""

from collections.abc import Iterable, Mapping

from typing_extensions import Buffer

class MergeError(ValueError):
    """The batches are not a run that can be merged, or one is malformed."""

class IdMap:
    """Schema IDs of the source registry mapped to the target registry's."""

    def __init__(self, mapping: Mapping[int, int] | None = None) -> None: ...
    def set(self, source: int, target: int) -> None: ...
    def get(self, source: int) -> int | None: ...
    def __len__(self) -> int: ...

class Merged:
    """One merged batch and what went into it."""

    @property
    def data(self) -> bytes:
        """The batch, ready to send; empty when ``unmapped`` is not."""
    @property
    def batches(self) -> int:
        """Input batches it holds: a prefix of the run when ``max_bytes`` cut it."""
    @property
    def records(self) -> int: ...
    @property
    def first_offset(self) -> int:
        """Source offset of its first record."""
    @property
    def next_offset(self) -> int:
        """Source offset after its last record."""
    @property
    def max_timestamp(self) -> int: ...
    @property
    def rewritten_ids(self) -> int: ...
    @property
    def plain_keys(self) -> int:
        """Non-null keys not in the Confluent wire format (copied unchanged)."""
    @property
    def plain_values(self) -> int:
        """Non-null values not in the Confluent wire format (copied unchanged)."""
    @property
    def plain_records(self) -> int:
        """Records whose key and value are both not in the wire format (null counts as not)."""
    @property
    def unmapped(self) -> list[int]:
        """Source schema IDs with no mapping: nothing was built, map them and merge again."""

def merge(
    batches: Iterable[Buffer],
    *,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    max_bytes: int = 0,
    ids: IdMap | None = None,
) -> Merged:
    """Merge a run of batches into one. ``batches``: buffers each holding one or more complete
    v2 batches of one partition, in offset order, contiguous, dense, one codec, CreateTime.
    Batches are taken while the merged records (uncompressed) fit ``max_bytes`` (0: no
    bound); the first is always taken."""

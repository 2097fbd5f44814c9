"""The two partitions kmirror talks about: a partition of the source cluster and the partition
of the target cluster its records land in.

Both are (topic, partition) pairs, the shape confluent-kafka and kafka-python hand out, so a key
built from a fetched record or a delivery report needs no conversion in the per-record path.
The names say which cluster a pair belongs to: a progress book is keyed by source partitions,
a producer's queues by target partitions; a mapping between them is spelled
`dict[TargetPartition, SourcePartition]`. They are aliases, not distinct types: mypy does not
tell them apart, the names are for the reader.
"""

from __future__ import annotations

from typing import TypeAlias

# A (topic, partition) on either cluster (shared queries that work on both sides take these).
Partition: TypeAlias = tuple[str, int]
# A partition of the source cluster: what the mirror copies, what the progress book tracks.
SourcePartition: TypeAlias = Partition
# A partition of the target cluster: where a source partition's records land.
TargetPartition: TypeAlias = Partition

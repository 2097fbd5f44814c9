"""confluent-kafka's admin types, typed, for the package's cluster code.

confluent-kafka's stubs do not declare most names of ``confluent_kafka.admin`` (they exist at
run time) and leave ``OffsetSpec``'s constructors untyped; the ``type: ignore``s for that gap are
here, so modules above import these names as from any typed library.
"""

from __future__ import annotations

from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourcePatternType,
    ResourceType,
)

__all__ = [
    "AclBinding",
    "AclBindingFilter",
    "AclOperation",
    "AclPermissionType",
    "AdminClient",
    "AlterConfigOpType",
    "ConfigEntry",
    "ConfigResource",
    "ConfigSource",
    "NewPartitions",
    "NewTopic",
    "ResourcePatternType",
    "ResourceType",
    "earliest",
    "latest",
]


def earliest() -> OffsetSpec:
    """ListOffsets: a partition's log start offset."""
    spec: OffsetSpec = OffsetSpec.earliest()  # type: ignore[no-untyped-call]
    return spec


def latest() -> OffsetSpec:
    """ListOffsets: a partition's end offset (high watermark, or last stable offset under
    read_committed)."""
    spec: OffsetSpec = OffsetSpec.latest()  # type: ignore[no-untyped-call]
    return spec

"""One exception root for everything kmirror raises on purpose.

Each class carries the process exit code the CLI uses for it, so the entrypoint, the
mirror and the validation job agree on what a code means:
0 ok, 1 mirror/runtime failure (or a validation mismatch), 2 bad configuration or input,
3 a cluster could not be reached or refused us.
"""

from __future__ import annotations


class KmirrorError(Exception):
    """Root of every deliberate kmirror error. The message names the problem and the fix."""

    exit_code: int = 1


class ConfigError(KmirrorError, ValueError):
    """The configuration is wrong. Nothing was started, committed or created."""

    exit_code = 2


class ClusterError(KmirrorError):
    """A cluster could not be reached, or refused our credentials or certificate."""

    exit_code = 3


class TopicError(KmirrorError):
    """A source/target topic layout makes mirroring unsafe (e.g. fewer target partitions)."""

    exit_code = 2


class MirrorError(KmirrorError):
    """The mirror stopped because continuing could lose or skip records."""

    exit_code = 1


class SendError(MirrorError):
    """The target did not acknowledge a record; no offset past it was committed."""


class SourceTrimmedError(MirrorError):
    """The source deleted records the mirror had not copied yet (retention/offset reset)."""


class ShutdownError(MirrorError):
    """The stream stopped without its final commit: records since the last commit will be
    copied again at the next start (duplicates, never a gap)."""

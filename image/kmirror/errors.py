"""One exception root for everything kmirror raises on purpose.

Each class carries the exit code `kmirror` (run, check and the image entrypoint) returns for it:
0 ok (also after SIGTERM or a first SIGINT: flushed and committed), 1 the mirror stopped to avoid
losing records, 2 bad configuration, input or topic layout (argparse usage errors are 2 as well),
3 a cluster could not be reached or refused us, 4 the mirror stopped on request but could not make
its final commit, 130 a second SIGINT (or Ctrl-C before the mirror started); a stream process
killed by signal N makes the mirror exit 128+N. `kmirror-validate` has its own three codes
(kmirror_validate/cli.py: 0 match, 1 mismatch, 2 could not run, an unreachable cluster included).
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


class CommitError(MirrorError):
    """The mirror stopped, but its final offset commit could not be made (target or source
    unreachable at shutdown). Nothing is lost: a restart copies the records since the last
    commit again. Raised by a stream; the supervisor exits with this code and says so."""

    exit_code = 4


class GroupError(KmirrorError):
    """A consumer-group operation (offsets, failover) cannot be done safely: unknown group,
    group active on the target, checkpoints or progress missing. Nothing was written."""

    exit_code = 2


class RegistryError(KmirrorError):
    """A schema registry could not be reached, or refused our credentials or certificate."""

    exit_code = 3


class SchemaError(MirrorError):
    """A schema could not be copied to the target registry, or a record's schema ID could not
    be translated. Nothing that needs it was copied; the message names the subject or ID."""

"""Which copier a mirror runs (`--engine record|batch|auto`, and `--exactly-once`): one
decision, made by the supervisor before anything starts (a refusal is a clear ConfigError)
and again, quietly, by each stream."""

from __future__ import annotations

import logging

from kmirror.config.model import MirrorConfig
from kmirror.errors import ConfigError
from kmirror.kafka.wireconf import connection_args
from kmirror.mirror.contract import CopierFactory
from kmirror.mirror.exactly_once_hybrid import TransactionalHybridCopier
from kmirror.mirror.hybrid import HybridCopier
from kmirror.mirror.record_copier import RecordCopier

log = logging.getLogger(__name__)


def engine_for(config: MirrorConfig, *, announce: bool = True) -> CopierFactory:
    """The copier factory for config.engine. `batch` refuses what the batch path cannot do
    (ConfigError naming the fix); `auto` takes the record path for it, with one log line
    (`announce`: the supervisor's; its streams ask again quietly)."""
    if config.engine == "record":
        return RecordCopier
    why = None
    if not config.keeps_partitions:  # ("batch" with hash is refused by the config model)
        why = "--partitioning hash re-partitions records"
    elif config.dr.provenance_header:
        why = "the provenance header changes every record's headers"
    else:
        try:
            connection_args(config.consumer_conf(), "source", 1)
            connection_args(config.producer_conf(), "target", 1)
        except ConfigError as exc:
            why = str(exc)
    if why is not None:
        if config.engine == "batch":
            raise ConfigError(
                f"--engine batch cannot copy this mirror: {why}. Use --engine auto (the "
                "record path where batches cannot be copied) or --engine record"
            )
        if announce:
            log.info("engine auto: the record path copies everything (%s)", why)
        return RecordCopier
    return TransactionalHybridCopier if config.exactly_once else HybridCopier

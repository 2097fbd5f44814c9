"""Which copier a mirror runs (`--engine record|batch|auto`, and `--exactly-once`): one
decision (`plan_for`), made by the supervisor before anything starts (a refusal is a clear
ConfigError) and handed to each stream process as a plain, picklable `Plan`. A stream builds
the copier and the delivery guarantee its plan names (`Plan.copier`) and decides nothing
again."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import partial
from typing import Literal

from kmirror.config.model import MirrorConfig
from kmirror.errors import ConfigError
from kmirror.kafka.wireconf import connection_args
from kmirror.mirror.contract import Copier, CopierContext, CopierFactory, Guarantee
from kmirror.mirror.guarantee import AtLeastOnce, ExactlyOnce
from kmirror.mirror.hybrid import HybridCopier
from kmirror.mirror.record_copier import RecordCopier

log = logging.getLogger(__name__)

Path = Literal["record", "hybrid"]


@dataclass(frozen=True)
class Plan:
    """What every stream of a mirror runs: the record path alone, or the hybrid (the batch path,
    the record path where batches cannot be copied); with transactions or not."""

    path: Path
    exactly_once: bool

    @property
    def copier(self) -> CopierFactory:
        """Builds the stream's guarantee and the copier that sends through it."""
        return partial(_build, self.path, self.exactly_once)


def _build(path: Path, exactly_once: bool, ctx: CopierContext) -> Copier:
    guarantee: Guarantee = ExactlyOnce(ctx) if exactly_once else AtLeastOnce(ctx.latch)
    if path == "record":
        return RecordCopier(ctx, guarantee)
    return HybridCopier(ctx, guarantee)


def plan_for(config: MirrorConfig) -> Plan:
    """The plan for config.engine. `batch` refuses what the batch path cannot do (ConfigError
    naming the fix); `auto` takes the record path for it, with one log line."""
    if config.engine == "record":
        return Plan("record", config.exactly_once)
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
        log.info("engine auto: the record path copies everything (%s)", why)
        return Plan("record", config.exactly_once)
    return Plan("hybrid", config.exactly_once)

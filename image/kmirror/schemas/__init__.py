"""Schemas follow the data: the source schema registry's subjects copied to the target registry
(sync.py), and the schema IDs that records carry kept or translated on the record path
(translator.py, wire.py), with the ID map persisted on the target (idstore.py). Registry calls
go through confluent-kafka's schema registry client (registry.py). docs/schemas.md.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry

from kmirror.config.model import MirrorConfig
from kmirror.schemas.idstore import IdStore
from kmirror.schemas.sync import RegistrySync
from kmirror.schemas.translator import SchemaMetrics, SchemaTranslator


def id_topic(config: MirrorConfig) -> str:
    """The compacted target topic holding the ID map. Ends in `.internal`: never mirrored."""
    return f"kmirror-schema-ids.{config.group_id}.internal"


def translator_for(
    config: MirrorConfig, registry: CollectorRegistry, ensure_topic: Callable[[str], None]
) -> SchemaTranslator | None:
    """The record path's translator, or None when schema mirroring is off."""
    settings = config.schemas
    if settings is None:
        return None
    store = IdStore(config, id_topic(config), ensure_topic)
    sync = RegistrySync(settings, config.target_topic)
    return SchemaTranslator(settings, sync, store, SchemaMetrics(registry))

"""Copy subjects from the source registry to the target registry: every version in order, with
its schema type and references, and the compatibility settings (global and per subject).

Subject names follow the mirror's topic rename policy where the subject names a topic
(TopicNameStrategy: `<topic>-key`, `<topic>-value`; `orders-value` -> `A.orders-value` under the
prefix policy); other subjects (RecordNameStrategy's `com.acme.Order`) keep their names.

A target subject that already exists must hold a prefix of the source's history: each of its
versions a schema the source subject has. Anything else is a conflict: a SchemaError naming the
subject, raised before anything is registered in it.

ID modes. `translate`: the target assigns IDs; `sync_*` return the source -> target ID pairs.
`preserve`: the subject is put into IMPORT mode and each version registered under the source's
ID and version number. A registry that does not keep the ID (Apicurio 3's Confluent API
assigns its own) gets the version taken back, and a SchemaError says to use translate.

Registering an old history can trip the target's compatibility rule (the source's may have
changed since): the target subject's level is set to NONE while versions are added, then to
the source subject's (translate; IMPORT mode skips checks itself).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from confluent_kafka.schema_registry import RegisteredSchema, Schema, SchemaReference

from kmirror.config.schemas import SchemaSettings
from kmirror.errors import SchemaError
from kmirror.schemas.registry import Registry

log = logging.getLogger(__name__)

TOPIC_SUFFIXES = ("-key", "-value")


def target_subject(subject: str, target_topic: Callable[[str], str]) -> str:
    """TopicNameStrategy subjects follow the topic rename; others keep their names."""
    for suffix in TOPIC_SUFFIXES:
        if subject.endswith(suffix) and len(subject) > len(suffix):
            return target_topic(subject[: -len(suffix)]) + suffix
    return subject


class RegistrySync:
    """Copies subjects; remembers what it copied (per subject: source versions done)."""

    def __init__(
        self,
        settings: SchemaSettings,
        target_topic: Callable[[str], str],
        source: Registry | None = None,
        target: Registry | None = None,
    ) -> None:
        self.settings = settings
        self._target_topic = target_topic
        self.source = source or Registry(settings.source)
        self.target = target or Registry(settings.target)
        # Per source subject: the last version known to be on the target, and the ID pairs.
        self._done: dict[str, int] = {}
        self._ids: dict[str, dict[int, int]] = {}
        self.registered = 0  # versions this process registered on the target

    def target_subject(self, subject: str) -> str:
        return target_subject(subject, self._target_topic)

    def selected(self) -> list[str]:
        return sorted(s for s in self.source.subjects() if self.settings.subject_selected(s))

    def sync_all(self) -> dict[int, int]:
        """Global compatibility, then every selected subject. Returns source -> target IDs."""
        level = self.source.compatibility()
        if level is not None and self.target.compatibility() != level:
            self.target.set_compatibility(level)
        ids: dict[int, int] = {}
        for subject in self.selected():
            ids.update(self.sync_subject(subject))
        return ids

    def sync_id(self, schema_id: int) -> dict[int, int]:
        """Copy what a record's schema ID needs: every selected subject that registered it, up
        to that version. {} when the source registry does not know the ID, or only excluded
        subjects use it."""
        ids: dict[int, int] = {}
        for subject, version in self.source.uses_of(schema_id):
            if self.settings.subject_selected(subject):
                ids.update(self.sync_subject(subject, upto=version))
        return ids

    def sync_subject(self, subject: str, upto: int | None = None) -> dict[int, int]:
        """Copy the subject's versions (all, or up to `upto`) in order; source -> target IDs of
        every version copied or already there."""
        versions = self.source.versions(subject)
        done = self._done.get(subject, 0)
        if versions and done >= (versions[-1] if upto is None else upto):
            return self._ids[subject]
        tsubject = self.target_subject(subject)
        existing = self.target.versions(tsubject)
        ids: dict[int, int] = {}
        found: list[int] = []
        missing = []
        for v in versions:
            rs = self.source.version(subject, v)
            schema = self._target_schema(rs.schema)
            there = self.target.lookup(tsubject, schema)
            if there is None:
                missing.append((v, rs, schema))
            else:
                found.append(v)
                ids[int(rs.schema_id or 0)] = int(there.schema_id or 0)
        if len(existing) > len(found) or (missing and found and missing[0][0] < found[-1]):
            raise SchemaError(
                f"target subject {tsubject} has a history that is not the source subject "
                f"{subject}'s ({len(existing)} version(s) there, {len(found)} of them in the "
                "source in the same order): kmirror registers nothing in it. Delete the target "
                "subject, exclude it (schema subjects exclude), or mirror under another name "
                "(rename policy)"
            )
        todo = [m for m in missing if upto is None or m[0] <= upto]
        if todo:
            ids.update(self._register(subject, tsubject, todo))
        self._sync_compatibility(subject, tsubject, changed=bool(todo))
        self._done[subject] = max([*found, *(m[0] for m in todo)], default=0)
        self._ids[subject] = ids
        return ids

    def _target_schema(self, schema: Schema) -> Schema:
        """The schema with its references pointing at the target's subjects (copied first)."""
        refs = []
        for ref in schema.references or []:
            if ref.subject is None or ref.version is None:
                raise SchemaError(f"a reference without subject/version: {ref}")
            self.sync_subject(ref.subject, upto=int(ref.version))
            refs.append(SchemaReference(ref.name, self.target_subject(ref.subject), ref.version))
        return Schema(schema.schema_str, schema.schema_type, refs)

    def _register(
        self, subject: str, tsubject: str, missing: list[tuple[int, RegisteredSchema, Schema]]
    ) -> dict[int, int]:
        ids: dict[int, int] = {}
        preserve = self.settings.id_mode == "preserve"
        if preserve:
            self.target.set_mode(tsubject, "IMPORT")
        else:
            self.target.set_compatibility("NONE", tsubject)
        for version, rs, schema in missing:
            source_id = int(rs.schema_id or 0)
            if preserve:
                got = self.target.import_version(tsubject, schema, source_id, version)
                if got != source_id:
                    self._undo(tsubject, got)
                    raise SchemaError(
                        f"the target schema registry {self.target.endpoint.url} did not keep "
                        f"schema ID {source_id} of {subject} version {version} (it assigned "
                        f"{got}; the registration was taken back): it cannot preserve IDs "
                        "(Apicurio 3's Confluent API ignores them). Use schema ID mode "
                        "'translate', or copy the registry with the registry's own "
                        "export/import first (Apicurio: /apis/registry/v3/admin/export, "
                        "/admin/import)"
                    )
            else:
                got = self.target.register(tsubject, schema)
            ids[source_id] = got
            self.registered += 1
            log.info(
                "schema %s version %s (id %s) registered on the target as %s (id %s)",
                subject, version, source_id, tsubject, got,
            )  # fmt: skip
        return ids

    def _undo(self, tsubject: str, schema_id: int) -> None:
        for v in self.target.versions(tsubject):
            if int(self.target.version(tsubject, v).schema_id or 0) == schema_id:
                self.target.delete_version(tsubject, v)

    def _sync_compatibility(self, subject: str, tsubject: str, changed: bool) -> None:
        level = self.source.compatibility(subject)
        if level is not None and (changed or self.target.compatibility(tsubject) != level):
            self.target.set_compatibility(level, tsubject)

    def behind(self) -> dict[str, int]:
        """Selected source subjects with versions not copied yet (subject -> how many)."""
        out = {}
        for subject in self.selected():
            done = self._done.get(subject, 0)
            n = len([v for v in self.source.versions(subject) if v > done])
            if n:
                out[subject] = n
        return out

    def pairs(self) -> dict[int, int]:
        """Source -> target IDs of every selected subject's versions that the target subject
        holds (the same schema, looked up there), read only: what the validator compares by."""
        ids: dict[int, int] = {}
        for subject in self.selected():
            tsubject = self.target_subject(subject)
            for v in self.source.versions(subject):
                rs = self.source.version(subject, v)
                refs = [
                    SchemaReference(r.name, self.target_subject(str(r.subject)), r.version)
                    for r in rs.schema.references or []
                ]
                there = self.target.lookup(
                    tsubject, Schema(rs.schema.schema_str, rs.schema.schema_type, refs)
                )
                if there is not None:
                    ids[int(rs.schema_id or 0)] = int(there.schema_id or 0)
        return ids

    def plan(self) -> list[dict[str, object]]:
        """What a sync would do, read only (`kmirror check`): per selected subject, its versions
        on both sides and `copy` (versions to register), `ok`, or `conflict` (the target
        subject has more versions than the source: a sync refuses it)."""
        rows: list[dict[str, object]] = []
        for subject in self.selected():
            tsubject = self.target_subject(subject)
            have, want = len(self.target.versions(tsubject)), len(self.source.versions(subject))
            action = "ok" if have == want else "copy" if have < want else "conflict"
            rows.append({"subject": subject, "target_subject": tsubject, "versions": want,
                         "target_versions": have, "action": action})  # fmt: skip
        return rows

    def close(self) -> None:
        self.source.close()
        self.target.close()

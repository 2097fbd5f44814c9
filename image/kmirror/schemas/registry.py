"""One schema registry, through confluent-kafka's own client (`confluent_kafka.schema_registry`),
with its errors turned into kmirror's at this one boundary.

The client covers subjects, versions, references, compatibility (`/config`) and modes (`/mode`).
It has no call that registers a version under a given ID and version number (the Confluent
API's IMPORT-mode registration: `id` and `version` in the request body; its `Schema` type
carries neither), so `import_version` sends that one request through the client's own REST
client (same URL, auth, TLS and retries).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

from confluent_kafka.schema_registry import (
    RegisteredSchema,
    Schema,
    SchemaRegistryClient,
)
from confluent_kafka.schema_registry.error import SchemaRegistryError

from kmirror.config.schemas import RegistryEndpoint
from kmirror.errors import RegistryError, SchemaError

log = logging.getLogger(__name__)

T = TypeVar("T")

# Confluent error codes (Apicurio's ccompat API answers the same ones).
SUBJECT_NOT_FOUND = 40401
VERSION_NOT_FOUND = 40402
SCHEMA_NOT_FOUND = 40403
SUBJECT_LEVEL_COMPAT_NOT_CONFIGURED = 40408
INCOMPATIBLE = 409


class MissingError(LookupError):
    """The registry answered 404: no such subject, version, schema or setting."""


class Registry:
    """A registry client for one side; created lazily (no network in the constructor)."""

    def __init__(self, endpoint: RegistryEndpoint) -> None:
        self.endpoint = endpoint
        self.side = endpoint.side
        self._client: SchemaRegistryClient | None = None

    @property
    def client(self) -> SchemaRegistryClient:
        if self._client is None:
            self._client = SchemaRegistryClient(self.endpoint.client_conf())
        return self._client

    def call(self, what: str, fn: Callable[[], T]) -> T:
        """fn() with the client's errors as kmirror's: 404 -> MissingError, 401/403 and unreachable
        -> RegistryError, other refusals -> SchemaError. Messages name the registry by URL
        (which never carries credentials: the settings refuse that)."""
        try:
            return fn()
        except SchemaRegistryError as exc:
            status = exc.http_status_code
            if status == 404:
                raise MissingError(exc.error_code) from exc
            where = f"the {self.side} schema registry {self.endpoint.url}"
            if status in (401, 403):
                raise RegistryError(
                    f"{where} refused our credentials ({status}) on {what}: check the "
                    f"{self.side} registry's basic auth user and password file (or bearer "
                    "token file) and its permissions"
                ) from None
            raise SchemaError(f"{where} refused {what}: {status} {exc.error_message}") from None
        except (OSError, ValueError) as exc:
            raise RegistryError(self._unreachable(what, exc)) from None
        except Exception as exc:  # httpx2's transport errors have no common public base here
            if type(exc).__module__.split(".")[0].startswith("httpx"):
                raise RegistryError(self._unreachable(what, exc)) from None
            raise

    def _unreachable(self, what: str, exc: Exception) -> str:
        return (
            f"the {self.side} schema registry {self.endpoint.url} could not be reached for "
            f"{what}: {type(exc).__name__}: {exc}. Check its URL, that it runs, and its TLS CA"
        )

    # -- reads ---------------------------------------------------------------------------------

    def subjects(self) -> list[str]:
        return list(self.call("listing subjects", self.client.get_subjects))

    def versions(self, subject: str) -> list[int]:
        """The subject's versions in order; [] for a subject that does not exist."""
        try:
            found = self.call(f"versions of {subject}", lambda: self.client.get_versions(subject))
        except MissingError:
            return []
        return sorted(int(v) for v in found)

    def version(self, subject: str, version: int) -> RegisteredSchema:
        return self.call(
            f"{subject} version {version}", lambda: self.client.get_version(subject, version)
        )

    def lookup(self, subject: str, schema: Schema) -> RegisteredSchema | None:
        """The subject's registration of this schema, or None."""
        try:
            return self.call(
                f"lookup in {subject}", lambda: self.client.lookup_schema(subject, schema)
            )
        except MissingError:
            return None

    def uses_of(self, schema_id: int) -> list[tuple[str, int]]:
        """(subject, version) pairs registered under this ID; [] for an ID the registry does
        not know."""
        try:
            found = self.call(
                f"schema ID {schema_id}", lambda: self.client.get_schema_versions(schema_id)
            )
        except MissingError:
            return []
        return [(str(v.subject), int(v.version or 0)) for v in found]

    def schema(self, schema_id: int) -> Schema | None:
        """The schema registered under this ID, or None when the registry does not know it."""
        try:
            return self.call(f"schema ID {schema_id}", lambda: self.client.get_schema(schema_id))
        except MissingError:
            return None

    def compatibility(self, subject: str | None = None) -> str | None:
        """The global level, or the subject's own (None when the subject has none)."""
        try:
            return str(
                self.call(
                    f"compatibility of {subject or 'the registry'}",
                    lambda: self.client.get_compatibility(subject),
                )
            )
        except MissingError:
            return None

    # -- writes --------------------------------------------------------------------------------

    def register(self, subject: str, schema: Schema) -> int:
        return int(
            self.call(
                f"registering in {subject}", lambda: self.client.register_schema(subject, schema)
            )
        )

    def import_version(self, subject: str, schema: Schema, schema_id: int, version: int) -> int:
        """Register under a given ID and version (the subject must be in IMPORT mode); returns
        the ID the registry assigned (a registry that ignores the request's ID assigns its own)."""
        body: dict[str, Any] = {**schema.to_dict(), "id": schema_id, "version": version}
        path = f"subjects/{_quote(subject)}/versions"
        rest = self.client._rest_client  # no public call takes an ID (module doc)
        answer = self.call(f"importing {subject} version {version}", lambda: rest.post(path, body))
        return int(answer["id"])

    def set_mode(self, subject: str, mode: str) -> None:
        self.call(f"mode of {subject}", lambda: self.client.update_mode(subject, mode))

    def set_compatibility(self, level: str, subject: str | None = None) -> None:
        self.call(
            f"compatibility of {subject or 'the registry'}",
            lambda: self.client.set_compatibility(subject, level),
        )

    def delete_version(self, subject: str, version: int) -> None:
        """Soft, then hard delete (undoing a registration the mirror cannot keep)."""
        what = f"deleting {subject} version {version}"
        self.call(what, lambda: self.client.delete_version(subject, version))
        self.call(what, lambda: self.client.delete_version(subject, version, permanent=True))

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


def _quote(subject: str) -> str:
    from urllib.parse import quote

    return quote(subject, safe="")

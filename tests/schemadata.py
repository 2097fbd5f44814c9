"""Schema-registry test data: Avro (with a reference), Protobuf and JSON Schema subjects with
several versions, written and read with confluent-kafka's own serializers and deserializers,
the way producers and consumers on either side of a mirror do it."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from confluent_kafka.schema_registry import (
    Schema,
    SchemaReference,
    SchemaRegistryClient,
    topic_subject_name_strategy,
)
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message

# The subjects here are TopicNameStrategy's (`<topic>-value`), named so. confluent-kafka 2.16's
# default strategy first asks the registry for the topic's associations, an endpoint Apicurio's
# Confluent API does not have: it usually answers 404 (then the topic strategy applies), but a
# clean-clone run hung for good on one such request (no timeout). Named, nothing is asked.
TOPIC_SUBJECTS = {"subject.name.strategy": topic_subject_name_strategy}
NO_AUTO = {"auto.register.schemas": False, "use.latest.version": True, **TOPIC_SUBJECTS}
ADDRESS = {"type": "record", "name": "Address", "namespace": "kmirror.test",
           "fields": [{"name": "city", "type": "string"}]}  # fmt: skip


def client(url: str) -> SchemaRegistryClient:
    # A registry that stops answering fails the test instead of hanging the suite.
    return SchemaRegistryClient({"url": url, "timeout": 30})


def ctx(topic: str) -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


def avro_order(version: int) -> dict[str, Any]:
    fields: list[dict[str, Any]] = [
        {"name": "id", "type": "long"},
        {"name": "ship_to", "type": "kmirror.test.Address"},
    ]
    if version >= 2:
        fields.append({"name": "note", "type": ["null", "string"], "default": None})
    return {"type": "record", "name": "Order", "namespace": "kmirror.test", "fields": fields}


def register_avro(sr: SchemaRegistryClient, topic: str, address_subject: str, version: int) -> int:
    """The Order schema (version 1 or 2) under `<topic>-value`, referencing Address."""
    if version == 1:
        sr.register_schema(address_subject, Schema(json.dumps(ADDRESS), "AVRO"))
    ref = SchemaReference("kmirror.test.Address", address_subject, 1)
    schema = Schema(json.dumps(avro_order(version)), "AVRO", [ref])
    return sr.register_schema(f"{topic}-value", schema)


def avro_writer(sr: SchemaRegistryClient, topic: str) -> Callable[[dict[str, Any]], bytes]:
    """Serializes with the subject's latest version (as registered by register_avro)."""
    sr.clear_latest_caches()  # the client keeps "latest" forever otherwise
    latest = sr.get_latest_version(f"{topic}-value").schema
    ser = AvroSerializer(sr, latest, conf=NO_AUTO)
    return lambda obj: bytes(ser(obj, ctx(topic)) or b"")


def proto_class(package: str, version: int) -> type[Message]:
    """A Payment message built from a descriptor (no protoc): version 2 adds a field."""
    label = descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL
    types = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(
        name=f"{package}_v{version}.proto", package=package, syntax="proto3"
    )
    m = fdp.message_type.add(name="Payment")
    m.field.add(name="id", number=1, type=types.TYPE_STRING, label=label)
    m.field.add(name="amount", number=2, type=types.TYPE_DOUBLE, label=label)
    if version >= 2:
        m.field.add(name="currency", number=3, type=types.TYPE_STRING, label=label)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    cls: type[Message] = message_factory.GetMessageClass(
        pool.FindMessageTypeByName(f"{package}.Payment")
    )
    return cls


def proto_writer(sr: SchemaRegistryClient, topic: str, cls: type[Message]) -> Callable[..., bytes]:
    """Registers the class's schema under `<topic>-value` on first use (auto-register)."""
    ser = ProtobufSerializer(cls, sr, {"use.deprecated.format": False, **TOPIC_SUBJECTS})
    return lambda **fields: bytes(ser(cls(**fields), ctx(topic)) or b"")


def json_schema(version: int) -> str:
    props: dict[str, Any] = {"sku": {"type": "string"}, "qty": {"type": "integer"}}
    if version >= 2:
        props["warehouse"] = {"type": "string"}
    return json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "title": "Item",
                       "type": "object", "properties": props})  # fmt: skip


def json_writer(
    sr: SchemaRegistryClient, topic: str, version: int
) -> Callable[[dict[str, Any]], bytes]:
    ser = JSONSerializer(json_schema(version), sr, lambda o, c: o, conf=TOPIC_SUBJECTS)
    return lambda obj: bytes(ser(obj, ctx(topic)) or b"")


@dataclass
class Readers:
    """Deserializers of one side's registry: bytes -> the object a consumer gets."""

    sr: SchemaRegistryClient
    proto: type[Message] | None = None

    def read(self, kind: str, topic: str, data: bytes) -> Any:
        if kind == "avro":
            return AvroDeserializer(self.sr, conf=TOPIC_SUBJECTS)(data, ctx(topic))
        if kind == "json":
            de = JSONDeserializer(None, schema_registry_client=self.sr, conf=TOPIC_SUBJECTS)
            return de(data, ctx(topic))
        assert self.proto is not None
        conf = {"use.deprecated.format": False, **TOPIC_SUBJECTS}
        de = ProtobufDeserializer(self.proto, conf, self.sr)
        return de(data, ctx(topic))


def schema_id(data: bytes) -> int:
    return int.from_bytes(data[1:5], "big")

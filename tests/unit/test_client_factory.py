"""Kafka clients are made in one place, kmirror.kafka.clients: that is where the librdkafka
logger, statistics and the security settings of the config model are attached, so a client
made anywhere else would be the one that logs to raw stderr or misses a setting."""

from __future__ import annotations

import ast

import pytest

from scripts import modulegraph

pytestmark = pytest.mark.unit

FACTORY = "kmirror.kafka.clients"
# confluent-kafka's clients, and kafka-python's connections (the batch path) with the class
# that wraps them.
CLIENTS = {"Consumer", "Producer", "AdminClient", "KafkaConnectionManager", "Link"}


def constructions(tree: ast.AST) -> list[str]:
    """`Name(...)` or `module.Name(...)` calls of a client class, by line."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in CLIENTS:
                found.append(f"{name}( at line {node.lineno}")
    return found


def test_the_finder_sees_plain_and_qualified_constructions() -> None:
    tree = ast.parse("a = Consumer({})\nb = confluent_kafka.admin.AdminClient({})\nProducer\n")
    assert constructions(tree) == ["Consumer( at line 1", "AdminClient( at line 2"]


def test_no_client_is_made_outside_the_factory() -> None:
    names = modulegraph.modules()
    assert FACTORY in names
    outside = {
        module: found
        for module, path in names.items()
        if module != FACTORY
        and (found := constructions(ast.parse(path.read_text(encoding="utf-8"))))
    }
    # kafka-python's connection manager is subclassed and made by Link itself (kafka/wire.py).
    assert outside == {}, "make clients with kmirror.kafka.clients"


def test_the_factory_makes_every_kind() -> None:
    path = modulegraph.modules()[FACTORY]
    made = {c.split("(")[0] for c in constructions(ast.parse(path.read_text(encoding="utf-8")))}
    assert made == {"Consumer", "Producer", "AdminClient", "Link"}

"""ACL sync settings in every dialect: MM2's keys with MM2's defaults in mm2.properties, off
unless given for MM1 and KUDO, flags over variables over the file, and bad input named."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kmirror.config.acls import parse_principal_map
from kmirror.errors import ConfigError
from tests.unit.config.conftest import load
from tests.unit.config.dialects.test_dr import KUDO, MM2, mm1

pytestmark = pytest.mark.unit

Write = Callable[[str, str], str]


def test_mm2_defaults_are_mm2s_on_every_600_s_narrow_scope_not_explicit(write: Write) -> None:
    a = load(["--mm2.config", write("m.properties", MM2)]).acls
    assert (a.enabled, a.interval_s, a.scope, a.explicit) == (True, 600.0, "mm2", False)


def test_mm2_keys_flow_specific_win_and_make_it_explicit(write: Write) -> None:
    text = MM2 + ("sync.topic.acls.enabled=false\nA->B.sync.topic.acls.enabled=true\n"
                  "sync.topic.acls.interval.seconds=30\nkmirror.acls.scope=full\n"
                  "kmirror.acls.principal.map=User:alice@A -> User:alice\n")  # fmt: skip
    config = load(["--mm2.config", write("m.properties", text)])
    a = config.acls
    assert (a.enabled, a.interval_s, a.scope, a.explicit) == (True, 30.0, "full", True)
    assert a.target_principal("User:alice@A") == "User:alice"
    assert a.target_principal("User:bob") == "User:bob"
    assert not any("sync.topic.acls" in n or "kmirror.acls" in n for n in config.notes)


def test_mm1_and_kudo_off_unless_given_flags_win_over_variables(write: Write) -> None:
    assert not load(mm1(write)).acls.enabled
    assert not load(KUDO).acls.enabled
    env = {"KMIRROR_SYNC_TOPIC_ACLS": "true", "KMIRROR_ACL_SCOPE": "full",
           "KMIRROR_SYNC_TOPIC_ACLS_INTERVAL_SECONDS": "5"}  # fmt: skip
    a = load([*mm1(write), "--acl-scope", "mm2"], env).acls
    assert (a.enabled, a.scope, a.interval_s, a.explicit) == (True, "mm2", 5.0, True)
    assert load([*KUDO, "--sync-topic-acls", "true"]).acls.enabled


@pytest.mark.parametrize(
    ("argv", "env", "fragment"),
    [
        (["--acl-scope", "all"], {}, "--acl-scope must be mm2 or full, not 'all'"),
        ([], {"KMIRROR_ACL_PRINCIPAL_MAP": "User:a = User:b"},
         "KMIRROR_ACL_PRINCIPAL_MAP: malformed principal map entry 'User:a = User:b'"),
        (["--acl-principal-map", "alice -> User:alice"], {},
         "'alice' is not a Kafka principal: write Type:name"),
        (["--sync-topic-acls-interval-s", "0"], {}, "must be > 0"),
        (["--acl-mirror-principal", "mirror"], {}, "'mirror' is not a Kafka principal"),
    ],
)  # fmt: skip
def test_bad_input_names_the_setting_and_the_fix(
    write: Write, argv: list[str], env: dict[str, str], fragment: str
) -> None:
    with pytest.raises(ConfigError) as err:
        load([*mm1(write), "--sync-topic-acls", "true", *argv], env)
    assert fragment in str(err.value)


def test_principal_map_takes_certificate_names_and_refuses_a_source_twice() -> None:
    text = "User:CN=bob,O=A -> User:bob\nUser:alice@A -> User:alice"
    assert parse_principal_map(text, "x") == (
        ("User:CN=bob,O=A", "User:bob"),
        ("User:alice@A", "User:alice"),
    )
    with pytest.raises(ConfigError, match="names User:a twice"):
        parse_principal_map("User:a -> User:b; User:a -> User:c", "x")

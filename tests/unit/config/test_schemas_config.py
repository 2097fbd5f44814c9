"""Schema mirroring settings from flags, KMIRROR_SCHEMA_* variables and mm2.properties."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kmirror.config.secret import Secret
from kmirror.errors import ConfigError
from tests.unit.config.conftest import load

pytestmark = pytest.mark.unit

Write = Callable[[str, str], str]
KUDO = ["--this-bootstrap-servers", "a:1", "--external-bootstrap-servers", "b:1",
        "--external-cluster-type", "SOURCE"]  # fmt: skip
URLS = ["--schema-registry-source-url", "http://s:8081", "--schema-registry-target-url",
        "https://t:8081/apis/ccompat/v7"]  # fmt: skip


def test_off_unless_urls_are_given() -> None:
    assert load(KUDO).schemas is None


def test_flags_and_variables(write: Write) -> None:
    password = write("pw", "s3cret\n")
    token = write("token", "tok-123\n")
    env = {
        "KMIRROR_SCHEMA_REGISTRY_SOURCE_BASIC_AUTH_USER": "mirror",
        "KMIRROR_SCHEMA_REGISTRY_SOURCE_BASIC_AUTH_PASSWORD_FILE": password,
        "KMIRROR_SCHEMA_REGISTRY_TARGET_BEARER_TOKEN_FILE": token,
        "KMIRROR_SCHEMA_ID_MODE": "preserve",
        "KMIRROR_SCHEMA_SUBJECTS_EXCLUDE": "internal-.*",
    }
    config = load([*KUDO, *URLS, "--schema-subjects", "orders-.*,com\\.acme\\..*"], env)
    s = config.schemas
    assert s is not None
    assert s.id_mode == "preserve"
    assert s.source.client_conf()["basic.auth.user.info"] == "mirror:s3cret"
    assert s.target.client_conf()["bearer.auth.token"] == "tok-123"
    assert s.subject_selected("orders-value") and s.subject_selected("com.acme.Order")
    assert not s.subject_selected("internal-x") and not s.subject_selected("payments-value")
    shown = repr(s)
    assert "s3cret" not in shown and "tok-123" not in shown


def test_mm2_keys_per_cluster_and_flow(write: Write) -> None:
    mm2 = write(
        "mm2.properties",
        "clusters=A, B\nA.bootstrap.servers=a:1\nB.bootstrap.servers=b:1\nA->B.enabled=true\n"
        "A.schema.registry.url=http://a:8081\nB.schema.registry.url=http://b:8081\n"
        "A.schema.registry.basic.auth.user.info=u:p@ss:word\n"
        "B.schema.registry.ssl.ca.location=/ca.pem\n"
        "A->B.schema.registry.subjects.exclude=tmp-.*\nschema.registry.unknown.id=copy\n",
    )
    config = load(["--mm2.config", mm2])
    s = config.schemas
    assert s is not None
    assert (s.source.url, s.target.url) == ("http://a:8081", "http://b:8081")
    assert s.source.basic_auth_user == "u"
    assert s.source.basic_auth_password == Secret("p@ss:word")
    assert s.target.ssl_ca_location == "/ca.pem"
    assert s.subjects_exclude == ("tmp-.*",) and s.unknown_id == "copy"
    assert not any("schema" in n for n in config.notes)  # nothing reported as unused


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--schema-registry-source-url", "http://s:1"], "needs both registry URLs"),
        ([*URLS, "--schema-id-mode", "keep"], "translate or preserve"),
        ([*URLS, "--schema-unknown-id", "drop"], "fail or copy"),
        ([*URLS, "--schema-subjects", "("], "schema subjects regex"),
        (["--schema-registry-source-url", "ftp://s", "--schema-registry-target-url", "http://t"],
         r"is not http\(s\)"),
        (["--schema-registry-source-url", "http://u:pw@s:1", "--schema-registry-target-url",
          "http://t:1"], "carries credentials"),
        ([*URLS, "--schema-registry-source-basic-auth-user", "u"], "user and a password file"),
    ],
)  # fmt: skip
def test_bad_settings_are_clear_errors(extra: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        load([*KUDO, *extra])
    assert "pw" not in str(caught.value).replace("password", "")


@pytest.mark.parametrize("engine", ["batch", "auto"])
def test_schema_ids_are_rewritten_on_the_batch_engines(engine: str) -> None:
    from kmirror.mirror.engine import plan_for

    assert plan_for(load([*KUDO, *URLS, "--engine", engine])).path == "hybrid"

"""kmirror-validate's direct flags build the two clusters as given, with the sides' security
from the same SOURCE_CLUSTER_* / SINK_CLUSTER_* variables the mirror reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from kmirror.config.secret import reveal
from kmirror.errors import ConfigError
from kmirror_validate import cli

pytestmark = pytest.mark.unit

DIRECT = ["--source-bootstrap-servers", "s:1", "--target-bootstrap-servers", "t:1"]


def test_direct_flags_are_the_clusters(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    password = tmp_path / "pw"
    password.write_text("s3cret\n")
    monkeypatch.setenv("SINK_CLUSTER_SECURITY_PROTOCOL", "SASL_SSL")
    monkeypatch.setenv("SINK_CLUSTER_SASL_MECHANISM", "PLAIN")
    monkeypatch.setenv("SINK_CLUSTER_SASL_USERNAME", "u")
    monkeypatch.setenv("SINK_CLUSTER_SASL_PASSWORD_FILE", str(password))
    config = cli.load(cli.build_parser().parse_args([*DIRECT, "--whitelist", "a.*"]))
    assert (config.source.bootstrap_servers, config.target.bootstrap_servers) == ("s:1", "t:1")
    assert config.source.common["security.protocol"] == "PLAINTEXT"
    assert config.target.common["security.protocol"] == "SASL_SSL"
    assert reveal(config.target.common["sasl.password"]) == "s3cret"
    assert config.topics.include == ("a.*",)
    assert config.dialect == "direct"


@pytest.mark.parametrize("flag", ["--flow", "--external-cluster-type", "--consumer.config"])
def test_direct_flags_refuse_a_dialect(flag: str) -> None:
    args = cli.build_parser().parse_args([*DIRECT, flag, "x"])
    with pytest.raises(ConfigError, match=f"cannot be combined with {flag}"):
        cli.load(args)

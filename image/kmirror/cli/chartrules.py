"""The Helm chart's cluster and security rules, read off the image's own model.

The chart (chart/kmirror) turns each cluster block of its values into the SOURCE_CLUSTER_* /
SINK_CLUSTER_* variables of config/sides.py. Which value becomes which variable, and which
Secret key is mounted where, is the chart's business: ROWS below. Everything else is the
model's, and this module asks the model instead of restating it:

- which variables a protocol, mechanism and OAUTHBEARER method read: `security_from_env` is
  called with every variable given, once more with each variable changed; a variable whose
  change changes nothing is not read;
- which settings are required: the same call without them raises;
- which cluster is the source in KUDO's pair: `sides.kudo_roles`;
- the enumerations (sides.PROTOCOLS, MECHANISMS, the methods of SIDE_VARS' read_by) and the
  defaults (each variable's default in SIDE_VARS).

chartschema.py writes the answers into the chart (values.schema.json, files/rules.json, the
README's table); `scripts/chart-rules` runs it, tests/chart/test_rules.py checks the files are
current and that the image accepts exactly what the chart does.
"""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from kmirror.config import sides
from kmirror.config.dialects.kudo import security_from_env
from kmirror.config.secret import reveal
from kmirror.errors import ConfigError

Path_ = tuple[str, ...]  # a value's path inside a side's view (see Row)
Who = tuple[str, str, str]  # securityProtocol, sasl.mechanism, auth.oauthbearer.method

# The OAUTHBEARER methods the model knows: the ones SIDE_VARS' read_by names.
METHODS: tuple[str, ...] = tuple(
    sorted({w.partition("/")[2] for v in sides.SIDE_VARS for w in v.read_by if "/" in w})
)
# The one enumeration the model keeps in code (security_from_env) rather than in a table; the
# matrix test (tests/chart/test_rules.py) tries a value outside it.
ALGORITHMS = ("https", "none")
# librdkafka's bootstrap.servers as config.model.ClusterConfig accepts it: host:port, the host
# anything up to the last colon; spaces around each entry are stripped. Checked against
# ClusterConfig by the matrix test.
_SERVER = r"\s*[^,]*[^,\s][^,]*:[0-9]+\s*"
HOST_PORTS = rf"^({_SERVER}(,{_SERVER})*)?$"
# An empty whitelist is the default (.*, config/env.py); any other must leave a pattern once
# split on commas and stripped of quotes and spaces (entrypoint.render.mirror_options,
# config.model.split_patterns). Checked against the loader by the matrix test too.
TOPICS = r"^$|[^\s,'\"]"


@dataclass(frozen=True)
class Row:
    """One per-side variable and the chart value it comes from. Paths are inside the side's
    view: its cluster block (source, target, thisCluster or external) plus `auth`, which is
    auth.<source|target> with `awsRegion` from auth.aws.region."""

    name: str  # the variable's suffix: <SOURCE_CLUSTER|SINK_CLUSTER>_<name>
    when: Path_  # the value that, when set, makes the chart set the variable
    kind: Literal["value", "file", "secretEnv"] = "value"  # the value / a mounted key / a Secret
    secret: Path_ = ()  # file, secretEnv: the value naming the Secret
    key: Path_ = ()  # file, secretEnv: the value naming the key in it
    file: str = ""  # file: where the key is mounted, under the side's secret directory

    @property
    def block(self) -> Literal["cluster", "auth"]:
        """Cluster-block values describe the cluster: one the side's settings do not read is a
        mistake. auth.<side> is consulted by mechanism, so what it does not need stays unused."""
        return "auth" if self.when[0] == "auth" else "cluster"

    @property
    def default(self) -> str:
        """What the chart's values.yaml holds when nothing is set: the variable's own default
        (a Secret's name: none)."""
        var = sides.BY_SUFFIX.get(self.name)
        return var.default if var is not None and self.kind == "value" else ""


# Values of a side's view that live elsewhere in values.yaml, shared by both sides.
SHARED: Mapping[Path_, Path_] = {("auth", "awsRegion"): ("auth", "aws", "region")}


def values_path(block: str, side: str, path: Path_) -> Path_:
    """A side-view path as a path of the chart's values, for the block playing `side`."""
    if path in SHARED:
        return SHARED[path]
    return ("auth", side, *path[1:]) if path[0] == "auth" else (block, *path)


_SASL, _TLS, _OAUTH = ("sasl",), ("tls",), ("auth", "oauthbearer")
# The values that pick what a side reads (files/rules.json "reads" is keyed by them).
BOOTSTRAP, PROTOCOL = ("bootstrapServers",), ("securityProtocol",)
MECHANISM, METHOD = (*_SASL, "mechanism"), (*_OAUTH, "method")
ROWS: tuple[Row, ...] = (
    Row(sides.BOOTSTRAP, BOOTSTRAP),
    Row("SECURITY_PROTOCOL", PROTOCOL),
    Row("SASL_MECHANISM", MECHANISM),
    Row("SASL_USERNAME", (*_SASL, "existingSecret"), "secretEnv", (*_SASL, "existingSecret"),
        (*_SASL, "usernameKey")),
    Row("SASL_PASSWORD_FILE", (*_SASL, "existingSecret"), "file", (*_SASL, "existingSecret"),
        (*_SASL, "passwordKey"), "sasl/password"),
    Row("SASL_OAUTHBEARER_METHOD", METHOD),
    Row("SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL", (*_OAUTH, "tokenEndpointUrl")),
    Row("SASL_OAUTHBEARER_CLIENT_ID", (*_OAUTH, "clientId")),
    Row("SASL_OAUTHBEARER_CLIENT_SECRET_FILE", (*_OAUTH, "existingSecret"), "file",
        (*_OAUTH, "existingSecret"), (*_OAUTH, "clientSecretKey"), "oauth/client-secret"),
    Row("SASL_OAUTHBEARER_SCOPE", (*_OAUTH, "scope")),
    Row("SASL_OAUTHBEARER_EXTENSIONS", (*_OAUTH, "extensions")),
    Row("SASL_OAUTHBEARER_CONFIG", (*_OAUTH, "unsecuredConfig")),
    Row("AWS_REGION", ("auth", "awsRegion")),
    Row("AWS_ROLE_ARN", ("auth", "awsRoleArn")),
    Row("SSL_CA_LOCATION", (*_TLS, "caSecret"), "file", (*_TLS, "caSecret"), (*_TLS, "caKey"),
        "tls-ca/ca.crt"),
    Row("SSL_CERTIFICATE_LOCATION", (*_TLS, "clientCertSecret"), "file",
        (*_TLS, "clientCertSecret"), (*_TLS, "certKey"), "tls-client/tls.crt"),
    Row("SSL_KEY_LOCATION", (*_TLS, "clientCertSecret"), "file", (*_TLS, "clientCertSecret"),
        (*_TLS, "keyKey"), "tls-client/tls.key"),
    Row("SSL_KEY_PASSWORD_FILE", (*_TLS, "keyPasswordKey"), "file", (*_TLS, "clientCertSecret"),
        (*_TLS, "keyPasswordKey"), "tls-client/key-password"),
    Row("SSL_ENDPOINT_IDENTIFICATION_ALGORITHM", (*_TLS, "endpointIdentificationAlgorithm")),
)  # fmt: skip
if {r.name for r in ROWS} != {sides.BOOTSTRAP, *sides.SIDE_SUFFIXES}:
    raise AssertionError("chartrules.ROWS must map every variable of config/sides.py")

# The choices of the variables whose value is one of a few (the rest take free text).
CHOICES: Mapping[str, tuple[str, ...]] = {
    "SECURITY_PROTOCOL": sides.PROTOCOLS,
    "SASL_MECHANISM": ("", *sides.MECHANISMS),
    "SASL_OAUTHBEARER_METHOD": METHODS,
    "SSL_ENDPOINT_IDENTIFICATION_ALGORITHM": ALGORITHMS,
}


@dataclass(frozen=True)
class Verdict:
    """What the image makes of one side with a protocol, mechanism and method."""

    valid: bool  # some settings make it work (SASL without a mechanism: never)
    reads: frozenset[str] = frozenset()  # the variables it reads
    required: frozenset[Path_] = frozenset()  # the values it cannot do without


def combinations() -> list[Who]:
    return [(p, m, x) for p in sides.PROTOCOLS for m in CHOICES["SASL_MECHANISM"] for x in METHODS]


def roles() -> dict[str, dict[str, str]]:
    """external.clusterType -> {source, target} -> the cluster block playing that part; the
    empty type is the explicit style (source and target as they are)."""
    out = {"": {"source": "source", "target": "target"}}
    for kind in sides.KUDO_TYPES:
        source, target = sides.kudo_roles("thisCluster", "external", kind)
        out[kind] = {"source": source, "target": target}
    return out


@functools.cache
def verdict(who: Who) -> Verdict:
    with tempfile.TemporaryDirectory(prefix="kmirror-chartrules-") as tmp:
        return _Probe(who, Path(tmp)).verdict()


class _Probe:
    """security_from_env on one side, every variable given, then each one changed or left out."""

    def __init__(self, who: Who, tmp: Path) -> None:
        self.who = who
        self.files = []
        for n, text in enumerate(("first", "second")):
            path = tmp / f"secret-{n}"
            path.write_text(text)
            self.files.append(str(path))

    def sample(self, row: Row, alternative: bool = False) -> str:
        choices = CHOICES.get(row.name)
        if choices is not None:
            given = dict(zip(("SECURITY_PROTOCOL", "SASL_MECHANISM", "SASL_OAUTHBEARER_METHOD"),
                             self.who, strict=True)).get(row.name, choices[0])  # fmt: skip
            return choices[(choices.index(given) + 1) % len(choices)] if alternative else given
        if sides.BY_SUFFIX[row.name].secret_file:
            return self.files[alternative]
        return f"{row.name.lower()}-{'b' if alternative else 'a'}"

    def conf(self, changed: str | None = None, left_out: Path_ | None = None) -> object:
        env = {
            f"{sides.SOURCE}_{r.name}": self.sample(r, alternative=r.name == changed)
            for r in ROWS
            if r.name != sides.BOOTSTRAP and r.when != left_out
        }
        try:
            conf, _notes = security_from_env(sides.SOURCE, env)
        except ConfigError as exc:
            return exc.__class__  # refused: differs from every accepted conf
        return {k: reveal(v) for k, v in conf.items()}

    def verdict(self) -> Verdict:
        base = self.conf()
        if not isinstance(base, dict):
            return Verdict(valid=False)
        reads = {sides.BOOTSTRAP, "SECURITY_PROTOCOL"} | {
            r.name for r in ROWS if r.name != sides.BOOTSTRAP and self.conf(changed=r.name) != base
        }
        switches = {r.when for r in ROWS if r.name in reads and r.name != sides.BOOTSTRAP}
        required = {w for w in switches if not isinstance(self.conf(left_out=w), dict)}
        return Verdict(True, frozenset(reads), frozenset(required))


def pairs() -> list[tuple[str, str]]:
    """The (protocol, mechanism) pairs some settings make valid."""
    return list(dict.fromkeys((p, m) for p, m, x in combinations() if verdict((p, m, x)).valid))


def readers(row: Row) -> set[tuple[str, str]]:
    """The valid (protocol, mechanism) pairs that read a cluster-block row, whatever the
    OAUTHBEARER method (a cluster row read with one method but not another has no schema)."""
    found: dict[tuple[str, str], set[bool]] = {}
    for p, m, x in combinations():
        v = verdict((p, m, x))
        if v.valid:
            found.setdefault((p, m), set()).add(row.name in v.reads)
    if any(len(seen) > 1 for seen in found.values()):
        raise AssertionError(f"{row.name}: read or not depending on the OAUTHBEARER method")
    return {pair for pair, seen in found.items() if True in seen}

"""The bad-input catalogue: one row per wrong input, in every dialect kmirror accepts.

Each row says what is wrong, how it is given to kmirror, the exit code and a fragment of the
message that must name the problem. tests/badinput/test_catalogue.py runs every row against the
real command (and the local clusters) and also checks that nothing was committed to the
consumer group and no topic appeared on the target. docs/bad-input.md is generated from this
table (`python -m tests.badinput.catalogue --write`); a test keeps the two in sync.

Exit codes (image/kmirror/errors.py): 0 ok (a warning only), 1 mirror failure, 2 bad
configuration or input, 3 a cluster unreachable or refusing us. `helm template` exits 1.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
DOC = REPO_ROOT / "docs" / "bad-input.md"
# Appears in rows that carry a credential (`{password}`): it must never be echoed back.
PASSWORD = "Catalogue-Pw-5f1e0c2a"


@dataclass
class Invocation:
    """What to run: `kmirror <args>` (or helm) with extra environment variables."""

    args: list[str]
    env: dict[str, str] = field(default_factory=dict)
    helm_values: Any = None  # set for chart rows: values passed to `helm template`


@dataclass(frozen=True)
class Builder:
    """How a row's input is made: the command it runs, and a function of the per-row context
    (test_catalogue.Ctx: files, clusters, topic, group) returning the Invocation."""

    command: str
    make: Callable[[Any], Invocation]

    def __call__(self, ctx: Any) -> Invocation:
        return self.make(ctx)


@dataclass(frozen=True)
class Case:
    id: str
    dialect: str
    what: str  # the wrong input, for the docs
    code: int
    fragment: str  # must appear in stderr/stdout (case-sensitive)
    build: Builder
    needs: str = ""  # "", "secure" (the SASL_SSL cluster), "chart" (helm)
    max_seconds: float = 60.0  # a cluster error must come within bounded time
    setup: str = ""  # extra cluster state the row needs (see test_catalogue.prepare)


# --------------------------------------------------------------------------- builders
# Each returns a Builder; `c` is the per-row context (files, clusters, topic, group).


def mm1(
    consumer: Mapping[str, str] | str | None = None,
    producer: Mapping[str, str] | str | None = None,
    *flags: str,
    command: str = "run",
    whitelist: str | None = "{topic}",
    env: Mapping[str, str] | None = None,
) -> Builder:
    """MirrorMaker 1 files. A dict is merged over working defaults (a value None removes a
    key); a str is the file's literal content."""

    def build(c: Any) -> Invocation:
        cfile = c.properties("consumer", consumer, c.consumer_defaults())
        pfile = c.properties("producer", producer, c.producer_defaults())
        args = [command, "--consumer.config", str(cfile), "--producer.config", str(pfile)]
        if whitelist is not None:
            args += ["--whitelist", c.fmt(whitelist)]
        return Invocation([*args, *(c.fmt(f) for f in flags)], dict(env or {}))

    return Builder(command, build)


def cli(*args: str, env: Mapping[str, str] | None = None) -> Builder:
    def build(c: Any) -> Invocation:
        return Invocation([c.fmt(a) for a in args], {k: c.fmt(v) for k, v in (env or {}).items()})

    return Builder(args[0], build)


def mm2(
    text: str, *flags: str, command: str = "run", env: Mapping[str, str] | None = None
) -> Builder:
    def build(c: Any) -> Invocation:
        path = c.write("mm2.properties", c.fmt(text))
        args = [command, "--mm2.config", str(path), *(c.fmt(f) for f in flags)]
        return Invocation(args, {k: c.fmt(v) for k, v in (env or {}).items()})

    return Builder(command, build)


def kudo(*flags: str, env: Mapping[str, str] | None = None, command: str = "run") -> Builder:
    def build(c: Any) -> Invocation:
        base = [
            command,
            "--this-bootstrap-servers",
            c.clusters.target_bootstrap,
            "--external-bootstrap-servers",
            c.clusters.source_bootstrap,
            "--external-cluster-type",
            "SOURCE",
            "--whitelist",
            c.topic,
            "--group-id",
            c.group,
        ]
        overrides = [c.fmt(f) for f in flags]
        args = _override_flags(base, overrides)
        return Invocation(args, {k: c.fmt(v) for k, v in (env or {}).items()})

    return Builder(command, build)


def _override_flags(base: list[str], overrides: list[str]) -> list[str]:
    """`--flag value` pairs in overrides replace the base's; `--flag __drop__` removes it."""
    out = list(base)
    i = 0
    while i < len(overrides):
        flag = overrides[i]
        value = overrides[i + 1] if i + 1 < len(overrides) else None
        if flag.startswith("--") and value is not None and not value.startswith("--"):
            if flag in out:
                j = out.index(flag)
                del out[j : j + 2]
            if value != "__drop__":
                out += [flag, value]
            i += 2
        else:
            out.append(flag)
            i += 1
    return out


def entry(command: str = "entrypoint", *args: str, **env: str | None) -> Builder:
    """The container entrypoint (or `render`) with a working environment, changed by env
    (a value None unsets the variable); args follow the command."""

    def build(c: Any) -> Invocation:
        base = {
            "SOURCE_CLUSTER_BOOTSTRAP_SERVERS": c.clusters.source_bootstrap,
            "SINK_CLUSTER_BOOTSTRAP_SERVERS": c.clusters.target_bootstrap,
            "SOURCE_CLUSTER_CONSUMER_GROUP": c.group,
            "WHITELISTED_TOPICS": c.topic,
            "KMIRROR_CONFIG_DIR": str(c.tmp / "rendered"),
            "KMIRROR_METRICS_PORT": "0",
        }
        for key, value in env.items():
            if value is None:
                base.pop(key, None)
            else:
                base[key] = c.fmt(value)
        return Invocation([command, *(c.fmt(a) for a in args)], base)

    return Builder(command, build)


def chart(values: Any) -> Builder:
    def build(c: Any) -> Invocation:
        return Invocation(["helm"], helm_values=values)

    return Builder("helm template", build)


# --------------------------------------------------------------------------- the table

OK_JAAS = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required "
    'username="alice" password="{password}";'
)
MM2_OK = """clusters = A, B
A.bootstrap.servers = {source}
B.bootstrap.servers = {target}
A->B.enabled = true
A->B.topics = {topic}
A->B.consumer.group.id = {group}
replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy
"""
MINIMAL_VALUES = {
    "source": {"bootstrapServers": "src:9092"},
    "target": {"bootstrapServers": "dst:9092"},
}

CASES: list[Case] = [
    # ------------------------------------------------------------------ command-line flags
    Case("no-config", "flags", "`kmirror run` without any configuration", 2,
         "no configuration given", cli("run")),
    Case("mixed-dialects", "flags", "MM1 `--consumer.config` together with `--mm2.config`", 2,
         "flags of different dialects cannot be mixed",
         cli("run", "--consumer.config", "c.properties", "--mm2.config", "mm2.properties")),
    Case("missing-producer-config", "flags", "`--consumer.config` without `--producer.config`",
         2, "MirrorMaker 1 mode needs --producer.config",
         cli("run", "--consumer.config", "c.properties", "--whitelist", ".*")),
    Case("missing-whitelist", "flags", "MM1 files without `--whitelist`", 2,
         "--whitelist REGEX is required", mm1(whitelist=None)),
    Case("invalid-whitelist-regex", "flags", "`--whitelist '[orders'` (unclosed bracket)", 2,
         "invalid whitelist/include regex '[orders'", mm1(whitelist="[orders")),
    Case("invalid-blacklist-regex", "flags", "`--blacklist 'tmp(('`", 2,
         "invalid blacklist/exclude regex 'tmp(('", mm1(None, None, "--blacklist", "tmp((")),
    Case("num-streams-not-a-number", "flags", "`--num.streams two`", 2,
         "--num.streams must be a whole number, not 'two'",
         mm1(None, None, "--num.streams", "two")),
    Case("num-streams-zero", "flags", "`--num.streams 0`", 2, "--num.streams must be >= 1",
         mm1(None, None, "--num.streams", "0")),
    Case("abort-flag-typo", "flags", "`--abort.on.send.failure ture`", 2,
         "--abort.on.send.failure must be true or false",
         mm1(None, None, "--abort.on.send.failure", "ture")),
    Case("partitioning-typo", "flags", "`--partitioning random`", 2,
         "--partitioning must be same or hash, not 'random'",
         mm1(None, None, "--partitioning", "random")),
    Case("engine-typo", "flags", "`--engine fast`", 2,
         "--engine must be record or batch or auto, not 'fast'",
         mm1(None, None, "--engine", "fast")),
    Case("engine-batch-hash", "flags", "`--engine batch --partitioning hash`", 2,
         "use --partitioning same, or --engine auto",
         mm1(None, None, "--engine", "batch", "--partitioning", "hash")),
    Case("rename-policy-typo", "flags", "`--rename-policy prefixed`", 2,
         "--rename-policy must be identity or prefix",
         mm1(None, None, "--rename-policy", "prefixed")),
    Case("acl-scope-typo", "flags", "`--sync-topic-acls true --acl-scope all`", 2,
         "--acl-scope must be mm2 or full, not 'all'",
         mm1(None, None, "--sync-topic-acls", "true", "--acl-scope", "all")),
    Case("acl-principal-format", "flags", "`--acl-principal-map 'alice -> User:alice'` (no "
         "principal type)", 2, "'alice' is not a Kafka principal: write Type:name",
         mm1(None, None, "--sync-topic-acls", "true", "--acl-principal-map",
             "alice -> User:alice")),
    Case("message-handler", "flags", "`--message.handler com.example.Handler` (a Java class)", 2,
         "MirrorMaker handlers and listeners are Java classes",
         mm1(None, None, "--message.handler", "com.example.Handler")),
    Case("misspelt-flag", "flags", "`--whitelsit` (typo; argparse)", 2,
         "unrecognized arguments: --whitelsit", mm1(None, None, "--whitelsit", "x")),
    Case("log-level-typo", "flags", "`--log-level LOUD`", 2, "LOUD",
         mm1(None, None, "--log-level", "LOUD")),
    Case("metrics-port-range", "flags", "`--metrics-port 70000`", 2,
         "the metrics port must be 0..65535", mm1(None, None, "--metrics-port", "70000")),
    Case("metrics-port-in-use", "flags", "`--metrics-port` that another process listens on "
         "(a second kmirror on the host)", 2,
         "is already in use (another kmirror on this host?): choose another with --metrics-port",
         mm1(None, None, "--metrics-port", "{busy_port}")),
    Case("commit-interval-negative", "flags", "`--offset.commit.interval.ms -5`", 2,
         "--offset.commit.interval.ms must be >= 1",
         mm1(None, None, "--offset.commit.interval.ms", "-5")),
    # ------------------------------------------------------------------ properties files
    Case("consumer-file-missing", "properties", "`--consumer.config` names a file that does not "
         "exist", 2, "cannot read properties file", mm1("__missing__")),
    Case("consumer-file-is-a-directory", "properties", "`--consumer.config` names a directory",
         2, "cannot read properties file", mm1("__dir__")),
    Case("malformed-unicode-escape", "properties", "a value with `\\u12` (malformed escape)", 2,
         "malformed \\uXXXX escape", mm1({"client.id": "mirror\\u12"})),
    Case("no-bootstrap", "properties", "consumer file without `bootstrap.servers`", 2,
         "has no bootstrap.servers", mm1({"bootstrap.servers": None})),
    Case("bootstrap-without-port", "properties", "`bootstrap.servers=localhost` (no port)", 2,
         "bootstrap server 'localhost' is not host:port", mm1({"bootstrap.servers": "localhost"})),
    Case("no-group-id", "properties", "consumer file without `group.id`", 2,
         "has no group.id", mm1({"group.id": None})),
    Case("empty-group-id", "properties", "`group.id=` (empty)", 2, "group.id is empty",
         mm1({"group.id": ""})),
    Case("unknown-key-warning", "properties", "unknown key `fetch.mn.bytes` (warning only)", 0,
         "unknown consumer property 'fetch.mn.bytes' ignored",
         mm1({"fetch.mn.bytes": "1"}, command="check")),
    Case("unknown-key-strict", "properties", "unknown key `fetch.mn.bytes` with `--strict`", 2,
         "--strict: 1 configuration warning(s)", mm1({"fetch.mn.bytes": "1"}, None, "--strict")),
    Case("prefixed-key-hint", "properties", "`consumer.fetch.min.bytes` in a client file, "
         "`--strict`", 2, "did you mean 'fetch.min.bytes'?",
         mm1({"consumer.fetch.min.bytes": "1"}, None, "--strict")),
    Case("invalid-value", "properties", "`linger.ms=soon` in the producer file", 2,
         "invalid value 'soon' for 'linger.ms'", mm1(None, {"linger.ms": "soon"})),
    Case("unrendered-placeholder", "properties",
         "`bootstrap.servers=$SOURCE_CLUSTER_BOOTSTRAP_SERVERS` (envsubst never ran)", 2,
         "unrendered environment placeholders",
         mm1({"bootstrap.servers": "$SOURCE_CLUSTER_BOOTSTRAP_SERVERS"})),
    Case("auto-offset-reset-typo", "properties", "`auto.offset.reset=oldest`", 2,
         "auto.offset.reset='oldest' must be earliest, latest or none",
         mm1({"auto.offset.reset": "oldest"})),
    Case("unknown-assignor", "properties",
         "`partition.assignment.strategy=com.example.MyAssignor`", 2, "names no assignor",
         mm1({"partition.assignment.strategy": "com.example.MyAssignor"})),
    Case("commit-interval-in-file", "properties",
         "`offset.commit.interval.ms=often` in the producer file", 2,
         "offset.commit.interval.ms in producer config",
         mm1(None, {"offset.commit.interval.ms": "often"})),
    Case("jks-truststore", "properties", "`ssl.truststore.location=truststore.jks` (missing)", 2,
         "JKS truststore", mm1({"security.protocol": "SSL",
                                "ssl.truststore.location": "/etc/kafka/truststore.jks",
                                "ssl.truststore.password": "{password}"})),
    Case("pkcs12-truststore", "properties", "`ssl.truststore.type=PKCS12`", 2,
         "PKCS12 truststore", mm1({"security.protocol": "SSL",
                                   "ssl.truststore.location": "/etc/kafka/truststore.p12",
                                   "ssl.truststore.type": "PKCS12"})),
    Case("jks-keystore", "properties", "`ssl.keystore.location=keystore.jks` (missing)", 2,
         "JKS keystore", mm1(None, {"security.protocol": "SSL",
                                    "ssl.keystore.location": "/etc/kafka/keystore.jks",
                                    "ssl.keystore.password": "{password}"})),
    Case("interceptor-class", "properties", "`interceptor.classes=com.example.Audit`", 2,
         "'interceptor.classes' is not supported",
         mm1({"interceptor.classes": "com.example.Audit"})),
    Case("jaas-malformed", "properties", "`sasl.jaas.config` without the trailing `;`", 2,
         "sasl.jaas.config is not of the form",
         mm1({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
              "sasl.jaas.config": OK_JAAS.rstrip(";")})),
    Case("jaas-mechanism-mismatch", "properties", "ScramLoginModule with `sasl.mechanism=PLAIN`",
         2, "uses ScramLoginModule: set sasl.mechanism=SCRAM-SHA-256 or SCRAM-SHA-512",
         mm1({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
              "sasl.jaas.config": OK_JAAS})),
    Case("jaas-kerberos", "properties", "`sasl.jaas.config` with Krb5LoginModule", 2,
         "login module Krb5LoginModule is not supported",
         mm1({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "GSSAPI",
              "sasl.jaas.config": 'com.sun.security.auth.module.Krb5LoginModule required '
              'useKeyTab=true keyTab="/k.keytab" principal="m@R";'})),
    Case("login-callback-class", "properties", "`sasl.login.callback.handler.class=...`", 2,
         "'sasl.login.callback.handler.class' is not supported",
         mm1({"sasl.login.callback.handler.class": "com.example.Login"})),
    # ------------------------------------------------------------------ mm2.properties
    Case("mm2-file-missing", "mm2.properties", "`--mm2.config` names a missing file", 2,
         "cannot read properties file", cli("run", "--mm2.config", "{tmp}/nope.properties")),
    Case("mm2-one-cluster", "mm2.properties", "`clusters = A` (one alias)", 2,
         "clusters= must list at least two cluster aliases",
         mm2("clusters = A\nA.bootstrap.servers = {source}\n")),
    Case("mm2-no-flow", "mm2.properties", "no `A->B.enabled = true`", 2,
         "no replication flow is enabled", mm2(MM2_OK.replace("A->B.enabled = true", ""))),
    Case("mm2-two-flows", "mm2.properties", "`A->B` and `B->A` enabled, no `--flow`", 2,
         "enables several flows", mm2(MM2_OK + "B->A.enabled = true\n")),
    Case("mm2-flow-not-enabled", "mm2.properties", "`--flow B->A` when only A->B is enabled", 2,
         "--flow B->A: not an enabled flow", mm2(MM2_OK, "--flow", "B->A")),
    Case("mm2-flow-unknown-alias", "mm2.properties", "`A->C.enabled = true`, C not in clusters",
         2, "names a cluster that is not in clusters=", mm2(MM2_OK + "A->C.enabled = true\n")),
    Case("dr-interval-zero", "mm2.properties", "`emit.checkpoints.interval.seconds = 0`", 2,
         "emit.checkpoints.interval.seconds must be > 0",
         mm2(MM2_OK + "emit.checkpoints.interval.seconds = 0\n")),
    Case("dr-groups-regex", "mm2.properties", "`groups = app[` (unclosed bracket)", 2,
         "invalid groups regex 'app['", mm2(MM2_OK + "groups = app[\n")),
    Case("dr-flag-not-bool", "flags", "`--emit-checkpoints maybe`", 2,
         "--emit-checkpoints must be true or false",
         mm1(None, None, "--emit-checkpoints", "maybe")),
    Case("failover-no-checkpoints", "mm2.properties",
         "`kmirror failover --group G` before any checkpoint was written (checkpoints topic "
         "missing)", 2, "checkpoints.internal does not exist on the target",
         mm2(MM2_OK.replace("A", "{group}"), "--group", "{group}", command="failover")),
    Case("mm2-enabled-typo", "mm2.properties", "`A->B.enabled = yes please`", 2,
         "A->B.enabled must be true or false",
         mm2(MM2_OK.replace("A->B.enabled = true", "A->B.enabled = yes please"))),
    Case("mm2-no-bootstrap", "mm2.properties", "no `B.bootstrap.servers`", 2,
         "B.bootstrap.servers is not set",
         mm2(MM2_OK.replace("B.bootstrap.servers = {target}\n", ""))),
    Case("mm2-policy-class", "mm2.properties", "a custom `replication.policy.class`", 2,
         "replication.policy.class com.example.MyPolicy is not supported",
         mm2(MM2_OK.replace("org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
                            "com.example.MyPolicy"))),
    Case("mm2-tasks-max-zero", "mm2.properties", "`tasks.max = 0`", 2,
         "tasks.max must be >= 1", mm2(MM2_OK + "tasks.max = 0\n")),
    Case("mm2-env-provider-unset", "mm2.properties",
         "`${env:KAFKA_PASSWORD}` and the variable is not set", 2,
         "refers to the environment variable KAFKA_PASSWORD, which is not set",
         mm2(MM2_OK + "A.sasl.password = ${{env:KAFKA_PASSWORD}}\n")),
    Case("mm2-vault-provider", "mm2.properties", "`${vault:secret/kafka:password}`", 2,
         "uses the config provider 'vault', which kmirror does not support",
         mm2(MM2_OK + "A.sasl.password = ${{vault:secret/kafka:password}}\n")),
    Case("mm2-file-provider-missing", "mm2.properties",
         "`${file:/missing.properties:password}`", 2, "cannot read properties file",
         mm2(MM2_OK + "A.sasl.password = ${{file:{tmp}/missing.properties:password}}\n")),
    Case("mm2-with-whitelist", "mm2.properties", "`--mm2.config` with `--whitelist`", 2,
         "--whitelist cannot be combined with --mm2.config", mm2(MM2_OK, "--whitelist", ".*")),
    # ------------------------------------------------------------------ KUDO flags / variables
    Case("kudo-cluster-type-typo", "KUDO", "`--external-cluster-type SOURCES`", 2,
         "must be SOURCE or DESTINATION, not 'SOURCES'",
         kudo("--external-cluster-type", "SOURCES")),
    Case("kudo-missing-external", "KUDO", "no `--external-bootstrap-servers`", 2,
         "KUDO mode needs --external-bootstrap-servers",
         kudo("--external-bootstrap-servers", "__drop__")),
    Case("kudo-num-streams-env", "KUDO", "`MIRROR_MAKER_NUM_STREAMS=two`", 2,
         "MIRROR_MAKER_NUM_STREAMS / NUM_STREAMS must be a whole number",
         kudo(env={"MIRROR_MAKER_NUM_STREAMS": "two"})),
    Case("kudo-protocol-typo", "KUDO", "`SOURCE_CLUSTER_SECURITY_PROTOCOL=TLS`", 2,
         "SOURCE_CLUSTER_SECURITY_PROTOCOL='TLS' must be one of",
         kudo(env={"SOURCE_CLUSTER_SECURITY_PROTOCOL": "TLS"})),
    Case("kudo-sasl-without-password-file", "KUDO",
         "`SASL_SSL` with a user name but no `SOURCE_CLUSTER_SASL_PASSWORD_FILE`", 2,
         "needs SOURCE_CLUSTER_SASL_USERNAME and SOURCE_CLUSTER_SASL_PASSWORD_FILE",
         kudo(env={"SOURCE_CLUSTER_SECURITY_PROTOCOL": "SASL_SSL",
                   "SOURCE_CLUSTER_SASL_MECHANISM": "SCRAM-SHA-512",
                   "SOURCE_CLUSTER_SASL_USERNAME": "alice"})),
    Case("kudo-unreadable-secret-file", "KUDO",
         "`SOURCE_CLUSTER_SASL_PASSWORD_FILE` names a file that cannot be read", 2,
         "SOURCE_CLUSTER_SASL_PASSWORD_FILE names",
         kudo(env={"SOURCE_CLUSTER_SECURITY_PROTOCOL": "SASL_SSL",
                   "SOURCE_CLUSTER_SASL_MECHANISM": "SCRAM-SHA-512",
                   "SOURCE_CLUSTER_SASL_USERNAME": "alice",
                   "SOURCE_CLUSTER_SASL_PASSWORD_FILE": "{unreadable}"})),
    Case("kudo-mtls-half", "KUDO", "client certificate without its key", 2,
         "mTLS needs both SINK_CLUSTER_SSL_CERTIFICATE_LOCATION and SINK_CLUSTER_SSL_KEY_LOCATION",
         kudo(env={"SINK_CLUSTER_SECURITY_PROTOCOL": "SSL",
                   "SINK_CLUSTER_SSL_CERTIFICATE_LOCATION": "/certs/client.pem"})),
    Case("kudo-sasl-mechanism-typo", "KUDO", "`SINK_CLUSTER_SASL_MECHANISM=SCRAM-SHA-1`", 2,
         "SINK_CLUSTER_SASL_MECHANISM must be one of",
         kudo(env={"SINK_CLUSTER_SECURITY_PROTOCOL": "SASL_SSL",
                   "SINK_CLUSTER_SASL_MECHANISM": "SCRAM-SHA-1"})),
    # ------------------------------------------------------------------ environment templates
    Case("env-missing-required", "environment", "entrypoint without "
         "`SOURCE_CLUSTER_BOOTSTRAP_SERVERS`", 2, "SOURCE_CLUSTER_BOOTSTRAP_SERVERS",
         entry(SOURCE_CLUSTER_BOOTSTRAP_SERVERS=None)),
    Case("env-render-missing-required", "environment", "`kmirror render` without "
         "`SINK_CLUSTER_BOOTSTRAP_SERVERS`", 2, "SINK_CLUSTER_BOOTSTRAP_SERVERS",
         entry("render", SINK_CLUSTER_BOOTSTRAP_SERVERS=None)),
    Case("env-template-dir-missing", "environment", "`KMIRROR_TEMPLATE_DIR` is not a directory",
         2, "KMIRROR_TEMPLATE_DIR names", entry(KMIRROR_TEMPLATE_DIR="{tmp}/no-templates")),
    Case("env-template-unknown-variable", "environment",
         "a mounted template uses `${NOT_SET_ANYWHERE}`", 2, "NOT_SET_ANYWHERE",
         entry(KMIRROR_TEMPLATE_DIR="{templates_with_unknown_var}")),
    Case("env-file-missing", "environment", "`KMIRROR_ENV_FILE` names a missing file", 2,
         "KMIRROR_ENV_FILE names", entry(KMIRROR_ENV_FILE="{tmp}/missing.env")),
    Case("env-num-streams", "environment", "`NUM_STREAMS=many`", 2,
         "NUM_STREAMS must be a whole number", entry(NUM_STREAMS="many")),
    Case("env-abort-typo", "environment", "`MIRROR_MAKER_ABORT_ON_SEND_FAILURE=perhaps`", 2,
         "MIRROR_MAKER_ABORT_ON_SEND_FAILURE must be true or false",
         entry(MIRROR_MAKER_ABORT_ON_SEND_FAILURE="perhaps")),
    Case("env-entrypoint-file-flag", "environment", "`kmirror entrypoint --consumer.config FILE`",
         2, "--consumer.config cannot follow `kmirror entrypoint`",
         entry("entrypoint", "--consumer.config", "{tmp}/mine.properties")),
    Case("env-log-format", "environment", "`KMIRROR_LOG_FORMAT=xml`", 2,
         "KMIRROR_LOG_FORMAT must be text or json", entry(KMIRROR_LOG_FORMAT="xml")),
    Case("env-kudo-contradiction", "environment",
         "KUDO variables and a different `SOURCE_CLUSTER_BOOTSTRAP_SERVERS`", 2,
         "contradicts KUDO mode",
         entry(MIRROR_MAKER_THIS_BOOTSTRAP_SERVERS="{target}",
               MIRROR_MAKER_EXTERNAL_BOOTSTRAP_SERVERS="elsewhere:9092",
               MIRROR_MAKER_EXTERNAL_CLUSTER_TYPE="SOURCE")),
    Case("env-kudo-type-typo", "environment", "`MIRROR_MAKER_EXTERNAL_CLUSTER_TYPE=SRC`", 2,
         "MIRROR_MAKER_EXTERNAL_CLUSTER_TYPE must be SOURCE",
         entry(SOURCE_CLUSTER_BOOTSTRAP_SERVERS=None, SINK_CLUSTER_BOOTSTRAP_SERVERS=None,
               MIRROR_MAKER_THIS_BOOTSTRAP_SERVERS="{target}",
               MIRROR_MAKER_EXTERNAL_BOOTSTRAP_SERVERS="{source}",
               MIRROR_MAKER_EXTERNAL_CLUSTER_TYPE="SRC")),
    Case("env-config-dir-unwritable", "environment", "`KMIRROR_CONFIG_DIR` not writable", 2,
         "cannot write the rendered configuration", entry(KMIRROR_CONFIG_DIR="/proc/kmirror")),
    Case("env-unreadable-secret", "environment",
         "`SINK_CLUSTER_SASL_PASSWORD_FILE` cannot be read", 2,
         "SINK_CLUSTER_SASL_PASSWORD_FILE names",
         entry(SINK_CLUSTER_SECURITY_PROTOCOL="SASL_SSL", SINK_CLUSTER_SASL_MECHANISM="PLAIN",
               SINK_CLUSTER_SASL_USERNAME="bob", SINK_CLUSTER_SASL_PASSWORD_FILE="{unreadable}")),
    Case("env-whitelist-regex", "environment", "`WHITELISTED_TOPICS=orders(`", 2,
         "invalid whitelist/include regex", entry(WHITELISTED_TOPICS="orders(")),
    # ------------------------------------------------------------------ clusters and topics
    Case("selection-matches-nothing", "clusters", "`kmirror check --whitelist 'no-such-.*'`", 2,
         "no source topic matches", mm1(command="check", whitelist="no-such-topic-{group}.*")),
    Case("acl-sync-no-authorizer", "clusters", "`--sync-topic-acls true` and a target "
         "without an authorizer (`run`)", 2, "has no authorizer",
         mm1(None, None, "--sync-topic-acls", "true")),
    Case("target-fewer-partitions", "clusters", "target topic exists with fewer partitions "
         "(`run`)", 2, "has 1 partitions but source topic", mm1(),
         setup="target-fewer-partitions"),
    Case("target-fewer-partitions-check", "clusters", "target topic exists with fewer "
         "partitions (`check`)", 2, "too-few-partitions", mm1(command="check"),
         setup="target-fewer-partitions"),
    Case("source-trimmed", "clusters", "committed offset deleted by retention on the source", 1,
         "deleted before they were mirrored", mm1(), setup="source-trimmed"),
    Case("no-committed-offset-none", "clusters",
         "`auto.offset.reset=none` and the group has no offset", 1,
         "auto.offset.reset=none", mm1({"auto.offset.reset": "none"}), setup="target-exists"),
    Case("eos-transaction-timeout-above-broker-max", "clusters", "`--exactly-once` with the "
         "producer's `transaction.timeout.ms=3600000`, above the target broker's "
         "`transaction.max.timeout.ms` (default 900000)", 2,
         "is above the target broker's transaction.max.timeout.ms",
         mm1(None, {"transaction.timeout.ms": "3600000"}, "--exactly-once"),
         setup="target-exists"),
    Case("unreachable-source-check", "clusters", "`check` with the source at 127.0.0.1:1", 3,
         "cannot reach the source cluster at 127.0.0.1:1",
         mm1({"bootstrap.servers": "127.0.0.1:1"}, command="check"), max_seconds=30),
    Case("unreachable-source-run", "clusters", "`run` with the source at 127.0.0.1:1", 3,
         "cannot reach the source cluster at 127.0.0.1:1",
         mm1({"bootstrap.servers": "127.0.0.1:1"}),
         max_seconds=45),
    Case("unreachable-target-run", "clusters", "`run` with the target at 127.0.0.1:1", 3,
         "cannot reach the target cluster at 127.0.0.1:1",
         mm1(None, {"bootstrap.servers": "127.0.0.1:1"}),
         max_seconds=45),
    # ------------------------------------------------------------------ security (SASL_SSL)
    Case("wrong-password", "security", "SCRAM-SHA-512 with a wrong password (`run`)", 3,
         "refused us: authentication failed", mm1("__secure__:wrong-password"), needs="secure",
         max_seconds=45),
    Case("wrong-password-check", "security", "SCRAM-SHA-512 with a wrong password (`check`)", 3,
         "refused us: authentication failed",
         mm1("__secure__:wrong-password", command="check"),
         needs="secure", max_seconds=30),
    Case("tls-ca-mismatch", "security", "broker certificate signed by another CA", 3,
         "TLS handshake failed", mm1("__secure__:other-ca"), needs="secure", max_seconds=45),
    Case("mechanism-not-enabled", "security", "`sasl.mechanism=PLAIN` against a SCRAM-only "
         "listener (`check`)", 3, "Unsupported SASL mechanism",
         mm1("__secure__:plain", command="check"),
         needs="secure", max_seconds=30),
    # ------------------------------------------------------------------ chart values
    Case("chart-negative-replicas", "chart values", "`replicaCount: -1`", 1,
         "/replicaCount", chart([MINIMAL_VALUES, {"replicaCount": -1}]), needs="chart"),
    Case("chart-cluster-type-typo", "chart values", "`external.clusterType: MIRROR`", 1,
         "/external/clusterType", chart({
             "thisCluster": {"bootstrapServers": "this:9092"},
             "external": {"bootstrapServers": "ext:9092", "clusterType": "MIRROR"}}),
         needs="chart"),
    Case("chart-misspelt-key", "chart values", "`replicas: 2` instead of `replicaCount`", 1,
         "additional properties 'replicas' not allowed",
         chart([MINIMAL_VALUES, {"replicas": 2}]), needs="chart"),
    Case("chart-password-in-extra-properties", "chart values",
         "`extraConsumerProperties: {sasl.password: ...}` (would land in a ConfigMap)", 1,
         "sasl.password cannot be set here: extra properties are stored in a ConfigMap",
         chart([MINIMAL_VALUES, {"extraConsumerProperties": {"sasl.password": PASSWORD}}]),
         needs="chart"),
    Case("chart-jaas-in-extra-properties", "chart values",
         "`extraProducerProperties: {sasl.jaas.config: ...}`", 1,
         "sasl.jaas.config cannot be set here",
         chart([MINIMAL_VALUES, {"extraProducerProperties": {"sasl.jaas.config": (
             "org.apache.kafka.common.security.plain.PlainLoginModule required "
             f'username="u" password="{PASSWORD}";')}}]), needs="chart"),
]  # fmt: skip


# --------------------------------------------------------------------------- the document


def markdown() -> str:
    lines = [
        "# Bad input: what kmirror says",
        "",
        "Every row is a test (`tests/badinput/test_catalogue.py`, marker `badinput`): the input "
        "is given to the real command, the exit code and the message fragment are checked, and "
        "so is that **nothing was committed** to the consumer group and **no topic appeared** "
        "on the target. Generated from `tests/badinput/catalogue.py` "
        "(`python -m tests.badinput.catalogue --write`); a test fails when this file is stale.",
        "",
        "Exit codes: 0 ok (a warning only), 1 the mirror stopped (continuing could lose "
        "records), 2 bad configuration or input, 3 a cluster unreachable or refusing us "
        "(bounded: `check` waits `--timeout` seconds per cluster, `run` about 30 s). "
        "`helm template` exits 1.",
        "",
        f"{len(CASES)} cases.",
        "",
        "| # | dialect | input | command | exit | message contains |",
        "|---|---|---|---|---|---|",
    ]
    for i, c in enumerate(CASES, 1):
        frag = c.fragment.replace("|", "\\|")
        what = c.what.replace("|", "\\|")
        command = c.build.command
        command = command if command.startswith("helm") else f"kmirror {command}"
        lines.append(f"| {i} | {c.dialect} | {what} | `{command}` | {c.code} | `{frag}` |")
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="print or write docs/bad-input.md")
    parser.add_argument("--write", action="store_true", help=f"write {DOC}")
    args = parser.parse_args(argv)
    text = markdown()
    if args.write:
        DOC.write_text(text, encoding="utf-8")
        print(f"wrote {DOC} ({len(CASES)} cases)")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The Spark edge: the session (with the Kafka connector jars) and the batch reads of Kafka.

The pyspark wheel has no Kafka connector. Its four jars come from the directory named by
KMIRROR_SPARK_JARS (the validate image sets it), else from the dev cache that
scripts/resolve-jars fills, and are passed as local paths in `spark.jars` (never
`spark.jars.packages`, which goes through Ivy and the network).
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kmirror.config import env as envvars
from kmirror.config import oauth
from kmirror.config.model import ClusterConfig, ConfValue
from kmirror.config.secret import Secret, mask_config, reveal
from kmirror.errors import ConfigError
from kmirror.kafka.cluster import Isolation
from kmirror_validate import sparklog

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

JARS_ENV = "KMIRROR_SPARK_JARS"
CONNECTOR_PREFIX = "spark-sql-kafka-0-10_"
# Spark shows data source options in plans and the UI; these keys carry credentials.
REDACT = r"(?i)secret|password|token|access[.]?key|jaas|keystore\.key|url"

# The columns of Spark's Kafka source (with includeHeaders), for empty stand-ins.
KAFKA_SCHEMA = (
    "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, "
    "timestampType int, headers array<struct<key:string,value:binary>>"
)


@dataclass(frozen=True)
class Range:
    """One Kafka partition's offsets to read, end exclusive."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return max(0, self.end - self.start)


# --------------------------------------------------------------------------- jars


def _pyspark_version() -> str:
    import pyspark

    return str(pyspark.__version__)


def connector_jars(environ: Mapping[str, str] | None = None) -> list[str]:
    """Local paths of the connector jars: $KMIRROR_SPARK_JARS/*.jar, else the dev cache's
    spark-kafka-<pyspark version>/ (or, with a warning, the newest one of the same major)."""
    env = os.environ if environ is None else environ
    given = envvars.get(JARS_ENV, env).strip()
    if given:
        directory = Path(given)
        jars = sorted(str(p) for p in directory.glob("*.jar"))
        if not any(Path(j).name.startswith(CONNECTOR_PREFIX) for j in jars):
            raise ConfigError(
                f"{JARS_ENV}={given} holds no {CONNECTOR_PREFIX}*.jar: point it at the "
                "directory of the spark-sql-kafka-0-10 jars (scripts/resolve-jars spark-kafka "
                "--print-dir)"
            )
        return jars
    cache = Path(os.path.expanduser(envvars.get("KMIRROR_CACHE", env))) / "jars"
    version = _pyspark_version()
    exact = cache / f"spark-kafka-{version}"
    candidates = [exact] if exact.is_dir() else _same_major(cache, version)
    for directory in candidates:
        jars = sorted(str(p) for p in directory.glob("*.jar"))
        if jars:
            if directory != exact:
                log.warning(
                    "no Kafka connector for Spark %s in %s; using %s (same major version)",
                    version, cache, directory.name,
                )  # fmt: skip
            return jars
    raise ConfigError(
        f"no Spark Kafka connector jars: set {JARS_ENV} to their directory, or run "
        f"scripts/resolve-jars spark-kafka (fills {exact})"
    )


def _same_major(cache: Path, version: str) -> list[Path]:
    major = version.split(".", maxsplit=1)[0]

    def key(p: Path) -> tuple[int, ...]:
        return tuple(int(x) for x in re.findall(r"\d+", p.name.removeprefix("spark-kafka-"))[:3])

    dirs = [p for p in cache.glob(f"spark-kafka-{major}.*") if p.is_dir()]
    return sorted(dirs, key=key, reverse=True)


# --------------------------------------------------------------------------- client options


def _jaas_quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _read_pem(path: str, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the {what} {path!r} ({exc.strerror})") from exc


_OAUTH_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
_MSK_IAM = "software.amazon.msk.auth.iam."


def _jaas(module: str, options: Mapping[str, str]) -> Secret:
    text = " ".join(f"{k}={_jaas_quote(v)}" for k, v in options.items())
    return Secret(f"{module} required{' ' if text else ''}{text};")


def _java_oauthbearer(c: Mapping[str, ConfValue]) -> dict[str, ConfValue]:
    """librdkafka's three OAUTHBEARER set-ups as the Java client spells them: MSK IAM (needs
    MSK's aws-msk-iam-auth jar beside the Kafka connector jars), OIDC client credentials and
    unsecured tokens."""
    if reveal(c.get(oauth.PROVIDER, "")) == oauth.MSK_IAM:
        options = {
            java: reveal(c[key])
            for java, key in (("awsProfileName", oauth.AWS_PROFILE), ("awsRoleArn",
                              oauth.AWS_ROLE_ARN), ("awsRoleSessionName",
                              oauth.AWS_ROLE_SESSION_NAME))
            if key in c
        }  # fmt: skip
        return {
            "sasl.mechanism": "AWS_MSK_IAM",
            "sasl.jaas.config": _jaas(f"{_MSK_IAM}IAMLoginModule", options),
            "sasl.client.callback.handler.class": f"{_MSK_IAM}IAMClientCallbackHandler",
        }
    extensions = dict(
        item.split("=", 1)
        for item in reveal(c.get("sasl.oauthbearer.extensions", "")).split(",")
        if "=" in item
    )
    if reveal(c.get("sasl.oauthbearer.method", "default")).lower() == "oidc":
        options = {
            "clientId": reveal(c.get("sasl.oauthbearer.client.id", "")),
            "clientSecret": reveal(c.get("sasl.oauthbearer.client.secret", "")),
        }
        if "sasl.oauthbearer.scope" in c:
            options["scope"] = reveal(c["sasl.oauthbearer.scope"])
        options.update({f"extension_{k}": v for k, v in extensions.items()})
        return {
            "sasl.jaas.config": _jaas(_OAUTH_MODULE, options),
            "sasl.login.callback.handler.class": "org.apache.kafka.common.security."
            "oauthbearer.OAuthBearerLoginCallbackHandler",
            "sasl.oauthbearer.token.endpoint.url": reveal(
                c.get("sasl.oauthbearer.token.endpoint.url", "")
            ),
        }
    if reveal(c.get("enable.sasl.oauthbearer.unsecure.jwt", "false")).lower() == "true":
        # librdkafka's "principal=admin lifeSeconds=600 extension_k=v" claims
        claims = dict(
            item.split("=", 1) for item in reveal(c.get("sasl.oauthbearer.config", "")).split()
        )
        options = {"unsecuredLoginStringClaim_sub": claims.get("principal", "")}
        if "lifeSeconds" in claims:
            options["unsecuredLoginLifetimeSeconds"] = claims["lifeSeconds"]
        options.update({k: v for k, v in claims.items() if k.startswith("extension_")})
        return {"sasl.jaas.config": _jaas(_OAUTH_MODULE, options)}
    raise ConfigError(
        "sasl.mechanism OAUTHBEARER without sasl.oauthbearer.method=oidc, unsecured tokens or "
        "an MSK IAM token provider cannot be read by the validation job's Spark reader"
    )


def java_client_options(conf: Mapping[str, ConfValue]) -> dict[str, ConfValue]:
    """librdkafka client settings -> Java client settings (un-prefixed), secrets still sealed.

    Only transport and authentication are translated: tuning keys mean different things in
    the two clients and the reader does not need them.
    """
    c = {k: v for k, v in conf.items() if v is not None and str(v) != ""}
    out: dict[str, ConfValue] = {"bootstrap.servers": reveal(c["bootstrap.servers"])}
    protocol = reveal(c.get("security.protocol", "PLAINTEXT")).upper()
    out["security.protocol"] = protocol
    if protocol.startswith("SASL"):
        mechanism = reveal(c.get("sasl.mechanism", c.get("sasl.mechanisms", "GSSAPI"))).upper()
        out["sasl.mechanism"] = mechanism
        if mechanism == "OAUTHBEARER":
            out.update(_java_oauthbearer(c))
        else:
            if mechanism == "PLAIN":
                module = "org.apache.kafka.common.security.plain.PlainLoginModule"
            elif mechanism.startswith("SCRAM-"):
                module = "org.apache.kafka.common.security.scram.ScramLoginModule"
            else:
                raise ConfigError(
                    f"sasl.mechanism {mechanism} is not supported by the validation job's Spark "
                    "reader: use PLAIN, SCRAM-SHA-256/512 or OAUTHBEARER"
                )
            user, password = c.get("sasl.username"), c.get("sasl.password")
            if user is None or password is None:
                raise ConfigError(f"SASL {mechanism} needs sasl.username and sasl.password")
            out["sasl.jaas.config"] = Secret(
                f"{module} required username={_jaas_quote(reveal(user))} "
                f"password={_jaas_quote(reveal(password))};"
            )
    if protocol.endswith("SSL"):
        if "ssl.ca.location" in c:
            out["ssl.truststore.type"] = "PEM"
            out["ssl.truststore.location"] = reveal(c["ssl.ca.location"])
        elif "ssl.ca.pem" in c:
            out["ssl.truststore.type"] = "PEM"
            out["ssl.truststore.certificates"] = reveal(c["ssl.ca.pem"])
        # Inline PEM (not file paths): executors on other hosts need no copy of the files.
        cert = c.get("ssl.certificate.pem")
        key = c.get("ssl.key.pem")
        if "ssl.certificate.location" in c:
            cert = _read_pem(reveal(c["ssl.certificate.location"]), "client certificate")
        if "ssl.key.location" in c:
            key = Secret(_read_pem(reveal(c["ssl.key.location"]), "client key"))
        if cert is not None and key is not None:
            out["ssl.keystore.type"] = "PEM"
            out["ssl.keystore.certificate.chain"] = reveal(cert)
            out["ssl.keystore.key"] = key if isinstance(key, Secret) else Secret(key)
            if "ssl.key.password" in c:
                password = c["ssl.key.password"]
                out["ssl.key.password"] = (
                    password if isinstance(password, Secret) else Secret(password)
                )
        algorithm = reveal(c.get("ssl.endpoint.identification.algorithm", "https")).lower()
        out["ssl.endpoint.identification.algorithm"] = "" if algorithm == "none" else algorithm
    return out


def reader_options(cluster: ClusterConfig, isolation: Isolation) -> dict[str, ConfValue]:
    """Options of Spark's Kafka source for one cluster (`kafka.`-prefixed, secrets sealed)."""
    conf = cluster.client_conf("consumer")
    java = java_client_options(conf)
    opts: dict[str, ConfValue] = {f"kafka.{k}": v for k, v in java.items()}
    opts["kafka.isolation.level"] = isolation
    log.info("kafka reader for %s: %s", cluster.alias, mask_config(opts))
    return opts


# --------------------------------------------------------------------------- session


def _local_cores(master: str) -> int:
    m = re.fullmatch(r"local\[(\d+|\*)(?:,\d+)?\]", master.strip())
    if m and m.group(1) != "*":
        return int(m.group(1))
    return os.cpu_count() or 2


def session_conf(master: str | None, jars: Sequence[str]) -> dict[str, str]:
    """Our defaults; --spark-conf values win over every one of them."""
    conf = {
        "spark.jars": ",".join(jars),
        "spark.redaction.regex": REDACT,
        "spark.sql.redaction.options.regex": REDACT,
        "spark.ui.showConsoleProgress": "false",  # our own progress lines instead
        "spark.driver.extraJavaOptions": sparklog.driver_java_options(),
    }
    if master is None or master.startswith("local"):
        conf["spark.sql.shuffle.partitions"] = str(max(4, 2 * _local_cores(master or "local[*]")))
        # Python workers run this interpreter (with this venv), not whatever python3 is first
        # on PATH.
        conf["spark.pyspark.python"] = sys.executable
    return conf


def build_session(
    master: str | None,
    jars: Sequence[str],
    extra_conf: Mapping[str, str] | None = None,
    app_name: str = "kmirror-validate",
    log_level: str = "WARN",
) -> SparkSession:
    """Create (or, under spark-submit, join) the session. Called by the CLI only."""
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

    under_submit = bool(os.environ.get("PYSPARK_GATEWAY_PORT"))
    conf = session_conf(master, jars)
    pending = SparkConf()  # under spark-submit this already holds its --jars / --conf
    if pending.get("spark.jars"):
        conf["spark.jars"] = ",".join(filter(None, [pending.get("spark.jars"), conf["spark.jars"]]))
    conf.update(extra_conf or {})
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    elif not under_submit and not pending.get("spark.master"):
        builder = builder.master("local[*]")
    for k, v in conf.items():
        builder = builder.config(k, v)
    if under_submit:  # the driver JVM runs already
        spark = builder.getOrCreate()
    else:
        sparklog.bind_locally(master or pending.get("spark.master", "local[*]"))
        with sparklog.jvm_stderr_filtered():  # the JVM starts here
            spark = builder.getOrCreate()
    for k in ("spark.sql.shuffle.partitions",):  # runtime settings also apply to a joined session
        if k in conf:
            spark.conf.set(k, conf[k])
    spark.sparkContext.setLogLevel(log_level)
    return spark


# --------------------------------------------------------------------------- reads


def _offsets_json(ranges: Sequence[Range], which: str) -> str:
    doc: dict[str, dict[str, int]] = {}
    for r in ranges:
        doc.setdefault(r.topic, {})[str(r.partition)] = r.start if which == "start" else r.end
    return json.dumps(doc, sort_keys=True)


def read_kafka(
    spark: SparkSession,
    options: Mapping[str, ConfValue],
    ranges: Sequence[Range],
    *,
    headers: bool = True,
    records_per_task: int = 1_000_000,
) -> DataFrame | None:
    """A batch DataFrame over exactly these ranges (None when all are empty).

    One task per partition; a partition larger than records_per_task is split into several
    offset ranges (minPartitions/maxRecordsPerPartition), so no task holds too much.
    Spark's data-loss check is off: records that retention deleted since the snapshot are
    simply not read, and the comparison (not Spark) decides what that means.
    """
    todo = [r for r in ranges if r.size > 0]
    if not todo:
        return None
    assign: dict[str, list[int]] = {}
    for r in todo:
        assign.setdefault(r.topic, []).append(r.partition)
    reader = spark.read.format("kafka")
    for k, v in options.items():
        reader = reader.option(k, reveal(v))
    total = sum(r.size for r in todo)
    wanted = math.ceil(total / max(1, records_per_task))
    reader = (
        reader.option("assign", json.dumps(assign, sort_keys=True))
        .option("startingOffsets", _offsets_json(todo, "start"))
        .option("endingOffsets", _offsets_json(todo, "end"))
        .option("includeHeaders", "true" if headers else "false")
        .option("failOnDataLoss", "false")
        .option("maxRecordsPerPartition", str(max(1, records_per_task)))
    )
    if wanted > len(todo):
        reader = reader.option("minPartitions", str(wanted))
    return reader.load()

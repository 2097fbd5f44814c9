"""Mirroring to and from a SASL_SSL (SCRAM-SHA-512) and an mTLS cluster whose CA the test run
made (tests/securecluster.py), with credentials read from files; wrong credentials give a clear,
quick error; and the password never shows: not in logs (DEBUG), /metrics, `kmirror render`,
`kmirror check`, error messages or the validation job's report.
"""

from __future__ import annotations

import json
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cleanenv import kmirror_env, mirror_process, run_kmirror
from tests.conftest import MakeTopic
from tests.kafkatools import Clusters, consume_all, end_offsets, produce, unique, wait_until
from tests.mirrorproc import free_port, write_properties
from tests.securecluster import USER, SecureCluster

pytestmark = pytest.mark.security


def records(n: int) -> list[dict[str, object]]:
    return [
        {"key": b"k%d" % i, "value": b"secure-%d" % i, "headers": [("h", b"%d" % i)]}
        for i in range(n)
    ]


def contents(bootstrap: str, topic: str) -> list[tuple[object, ...]]:
    return [r.content() for r in consume_all(bootstrap, topic)]


def assert_no_secret(text: str, *secrets: str) -> None:
    for s in secrets:
        assert s not in text, (
            f"secret found in output: ...{text[max(text.find(s) - 200, 0) :][:400]}"
        )


def run_validation(
    source: str, target: str, topic: str, report: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """kmirror-validate (digest mode, JSON report) with exactly `env`."""
    args = ["--source-bootstrap-servers", source, "--target-bootstrap-servers", target,
            "--topics", topic, "--mode", "digest", "--json-out", str(report),
            "--no-progress"]  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "kmirror_validate.cli", *args],
        capture_output=True,
        text=True,
        timeout=1200,  # Spark on a busy 2-core machine has needed over 600 s
        env=env,
        check=False,
    )


def sasl_env(side: str, s: SecureCluster, password_file: Path | None = None) -> dict[str, str]:
    return {
        f"{side}_SECURITY_PROTOCOL": "SASL_SSL",
        f"{side}_SASL_MECHANISM": "SCRAM-SHA-512",
        f"{side}_SASL_USERNAME": USER,
        f"{side}_SASL_PASSWORD_FILE": str(password_file or s.password_file),
        f"{side}_SSL_CA_LOCATION": str(s.pki.ca),
    }


def entry_env(tmp: Path, source: str, target: str, topic: str, group: str) -> dict[str, str]:
    return {
        "SOURCE_CLUSTER_BOOTSTRAP_SERVERS": source,
        "SINK_CLUSTER_BOOTSTRAP_SERVERS": target,
        "SOURCE_CLUSTER_CONSUMER_GROUP": group,
        "WHITELISTED_TOPICS": topic,
        "MIRROR_MAKER_OFFSET_COMMIT_INTERVAL": "1000",
        "KMIRROR_CONFIG_DIR": str(tmp / "rendered"),
        "LOG_LEVEL": "DEBUG",  # the most a log can say
    }


def test_entrypoint_mirrors_from_sasl_ssl_with_a_password_file(
    tmp_path: Path, clusters: Clusters, secure_cluster: SecureCluster, make_topic: MakeTopic
) -> None:
    """Source: SASL_SSL + SCRAM-SHA-512, CA from the test run, password from a mounted file."""
    s = secure_cluster
    topic = make_topic(s.plaintext, unique("sec-src"), partitions=2)
    produce(s.plaintext, topic, records(300))
    port = free_port()
    env = kmirror_env(
        {
            **entry_env(tmp_path, s.sasl_ssl, clusters.target_bootstrap, topic, unique("g")),
            **sasl_env("SOURCE_CLUSTER", s),
            "KMIRROR_METRICS_PORT": str(port),
        }
    )
    with mirror_process(["entrypoint"], tmp_path / "m.log", env=env, metrics_port=port) as m:
        wait_until(lambda: sum(end_offsets(clusters.target_bootstrap, topic).values()) >= 300, 90)
        m.wait_ready(60)
        scraped = "".join(m.get(p)[1] for p in ("/metrics", "/healthz", "/readyz"))
        assert m.stop() == 0, m.log[-3000:]
        log = m.log
    assert contents(s.plaintext, topic) == contents(clusters.target_bootstrap, topic)
    assert "sasl.password=***" in log  # the rendered file is logged, masked
    assert_no_secret(log + scraped, s.password)
    consumer_file = tmp_path / "rendered" / "consumer.properties"
    assert stat.S_IMODE(consumer_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(consumer_file.parent.stat().st_mode) == 0o700


def test_mm2_mirrors_to_sasl_ssl_with_the_file_config_provider(
    tmp_path: Path, clusters: Clusters, secure_cluster: SecureCluster, make_topic: MakeTopic
) -> None:
    """Target: SASL_SSL; mm2.properties takes the password from a file through Kafka's
    FileConfigProvider (`${file:path:key}`), the way Strimzi/Connect users write it."""
    s = secure_cluster
    topic = make_topic(clusters.source_bootstrap, unique("sec-dst"), partitions=2)
    produce(clusters.source_bootstrap, topic, records(200))
    creds = write_properties(tmp_path / "creds.properties", {"password": s.password})
    creds.chmod(0o600)
    mm2 = tmp_path / "mm2.properties"
    mm2.write_text(
        f"""clusters = A, B
A.bootstrap.servers = {clusters.source_bootstrap}
B.bootstrap.servers = {s.sasl_ssl}
B.security.protocol = SASL_SSL
B.sasl.mechanism = SCRAM-SHA-512
B.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required \\
    username="{USER}" password="${{file:{creds}:password}}";
B.ssl.truststore.type = PEM
B.ssl.truststore.location = {s.pki.ca}
config.providers = file
config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider
A->B.enabled = true
A->B.topics = {topic}
A->B.consumer.group.id = {unique("g")}
A->B.offset.flush.interval.ms = 1000
replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy
""",
        encoding="utf-8",
    )
    check = run_kmirror(["check", "--mm2.config", str(mm2), "--json"], env=kmirror_env({}))
    assert check.returncode == 0, check.stderr[-3000:]
    # MM2's heartbeats topics (left by other MM2-dialect mirrors) are selected too: find ours.
    rows = {r["source"]: r for r in json.loads(check.stdout)["topics"]}
    assert rows[topic]["action"] == "create"
    assert_no_secret(check.stdout + check.stderr, s.password)
    with mirror_process(
        ["run", "--mm2.config", str(mm2), "--log-level", "DEBUG"],
        tmp_path / "m.log",
        env=kmirror_env({}),
    ) as m:
        wait_until(lambda: sum(end_offsets(s.plaintext, topic).values()) >= 200, 90)
        assert m.stop() == 0, m.log[-3000:]
        log = m.log
    assert contents(clusters.source_bootstrap, topic) == contents(s.plaintext, topic)
    assert_no_secret(log, s.password)


def test_mm1_mirrors_over_mutual_tls(
    tmp_path: Path, clusters: Clusters, secure_cluster: SecureCluster, make_topic: MakeTopic
) -> None:
    """Source: TLS with a client certificate (Java PEM keystore: key and chain in one file)."""
    s = secure_cluster
    topic = make_topic(s.plaintext, unique("sec-mtls"), partitions=1)
    produce(s.plaintext, topic, records(100))
    cprops = write_properties(tmp_path / "c.properties", {**s.java_mtls(), "group.id": unique("g")})
    pprops = write_properties(
        tmp_path / "p.properties", {"bootstrap.servers": clusters.target_bootstrap}
    )
    args = ["run", "--consumer.config", str(cprops), "--producer.config", str(pprops),
            "--whitelist", topic, "--offset.commit.interval.ms", "1000"]  # fmt: skip
    with mirror_process(args, tmp_path / "m.log", env=kmirror_env({})) as m:
        wait_until(lambda: sum(end_offsets(clusters.target_bootstrap, topic).values()) >= 100, 90)
        assert m.stop() == 0, m.log[-3000:]
    assert contents(s.plaintext, topic) == contents(clusters.target_bootstrap, topic)


@pytest.mark.parametrize("command", ["entrypoint", "check"])
def test_wrong_password_is_a_clear_authentication_error(
    command: str,
    tmp_path: Path,
    clusters: Clusters,
    secure_cluster: SecureCluster,
    make_topic: MakeTopic,
) -> None:
    """Exit 3 within seconds, the message says authentication failed, neither the wrong nor
    the right password is shown."""
    s = secure_cluster
    topic = make_topic(s.plaintext, unique("sec-wrong"), partitions=1)
    wrong = "Wrong-" + s.password[::-1]
    wrong_file = tmp_path / "wrong.password"
    wrong_file.write_text(wrong)
    env = {
        **entry_env(tmp_path, s.sasl_ssl, clusters.target_bootstrap, topic, unique("g")),
        **sasl_env("SOURCE_CLUSTER", s, wrong_file),
        "KMIRROR_METRICS_PORT": "0",
    }
    if command == "check":
        # Render the files as the entrypoint would, then check them (MM1 flags).
        rendered = run_kmirror(
            ["render", "--output-dir", str(tmp_path / "r")], env=kmirror_env(env)
        )
        assert rendered.returncode == 0, rendered.stderr
        r = tmp_path / "r"
        args = ["check", "--consumer.config", str(r / "consumer.properties")]
        args += ["--producer.config", str(r / "producer.properties"), "--whitelist", topic]
    else:
        args = ["entrypoint"]
    result = run_kmirror(args, timeout=120, env=kmirror_env(env))
    out = result.stdout + result.stderr
    assert result.returncode == 3, out[-3000:]
    assert "refused us: authentication failed" in out, out[-3000:]
    assert result.elapsed < 30, result.elapsed  # type: ignore[attr-defined]
    assert_no_secret(out, wrong, s.password)


def test_render_and_check_never_show_the_password(
    tmp_path: Path, clusters: Clusters, secure_cluster: SecureCluster, make_topic: MakeTopic
) -> None:
    s = secure_cluster
    topic = make_topic(s.plaintext, unique("sec-render"), partitions=1)
    env = kmirror_env(
        {
            **entry_env(tmp_path, s.sasl_ssl, s.sasl_ssl, topic, unique("g")),
            **sasl_env("SOURCE_CLUSTER", s),
            **sasl_env("SINK_CLUSTER", s),
        }
    )
    outputs = []
    for args in (["render"], ["render", "--json"], ["render", "--output-dir", str(tmp_path / "r")]):
        r = run_kmirror(args, env=env)
        assert r.returncode == 0, r.stderr
        assert "***" in r.stdout
        outputs.append(r.stdout + r.stderr)
    # The written files hold the password (they are the mirror's config), readable by us only.
    written = (tmp_path / "r" / "consumer.properties").read_text()
    assert s.password in written.replace("\\", "")
    r = tmp_path / "r"
    files = ["--consumer.config", str(r / "consumer.properties"),
             "--producer.config", str(r / "producer.properties"), "--whitelist", ".*"]  # fmt: skip
    for extra in ([], ["--json"]):
        result = run_kmirror(["check", *files, *extra], env=env)
        assert result.returncode in (0, 2), result.stderr[-3000:]  # 2: a target topic missing
        outputs.append(result.stdout + result.stderr)
    assert_no_secret("\n".join(outputs), s.password)


@pytest.mark.spark
def test_validation_job_reads_credentials_from_files(
    tmp_path: Path, clusters: Clusters, secure_cluster: SecureCluster, make_topic: MakeTopic
) -> None:
    """kmirror-validate against the SASL_SSL source (password file) and the plain target,
    after a mirror: a match, and no password in its report or log."""
    s = secure_cluster
    topic = make_topic(s.plaintext, unique("sec-validate"), partitions=2)
    produce(s.plaintext, topic, records(150))
    env = kmirror_env(
        {
            **entry_env(tmp_path, s.sasl_ssl, clusters.target_bootstrap, topic, unique("g")),
            **sasl_env("SOURCE_CLUSTER", s),
            "KMIRROR_METRICS_PORT": "0",
        }
    )
    with mirror_process(["entrypoint"], tmp_path / "m.log", env=env) as m:
        wait_until(lambda: sum(end_offsets(clusters.target_bootstrap, topic).values()) >= 150, 90)
        m.signal(signal.SIGTERM)
        assert m.wait(60) == 0, m.log[-3000:]
    report = tmp_path / "report.json"
    result = run_validation(s.sasl_ssl, clusters.target_bootstrap, topic, report, env)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-4000:]
    assert report.exists(), out[-4000:]
    doc = json.loads(report.read_text())
    assert doc["ok"] and doc["totals"]["matched"] == 150, report.read_text()[-3000:]
    assert_no_secret(out + report.read_text(), s.password)

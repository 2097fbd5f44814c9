"""The batch path over SASL_SSL (SCRAM-SHA-512) and mTLS: the cluster settings in the config
model's librdkafka keys reach kafka-python's connections, records arrive byte for byte, and a
wrong password is a ClusterError (refused, not timed out) that does not show the password."""

from __future__ import annotations

import pytest

from kmirror.errors import ClusterError
from kmirror.mirror.batch.copier import BatchCopier
from kmirror.progress.book import ProgressBook
from tests.integration.batchcopy import copied_exactly, mirror_config
from tests.kafkatools import create_topic, produce, unique
from tests.securecluster import USER, SecureCluster

pytestmark = pytest.mark.security


def sasl(s: SecureCluster, password: str) -> dict[str, str]:
    return {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": USER,
        "sasl.password": password,
        "ssl.ca.location": str(s.pki.ca),
    }


def mtls(s: SecureCluster) -> dict[str, str]:
    return {
        "security.protocol": "SSL",
        "ssl.ca.location": str(s.pki.ca),
        "ssl.certificate.location": str(s.pki.client_cert),
        "ssl.key.location": str(s.pki.client_key),
    }


def test_batch_copy_from_sasl_ssl_to_mtls(secure_cluster: SecureCluster) -> None:
    s = secure_cluster
    src, dst = unique("bsec-src"), unique("bsec-dst")
    create_topic(s.plaintext, src, 2)
    create_topic(s.plaintext, dst, 2)
    rows = [
        {"key": b"k%d" % i, "value": b"v%d" % i, "headers": [("h", b"1")], "partition": i % 2}
        for i in range(2000)
    ]
    produce(s.plaintext, src, rows, **{"compression.type": "lz4"})
    config = mirror_config(s.sasl_ssl, s.mtls, sasl(s, s.password), mtls(s))
    copied_exactly(s.plaintext, s.plaintext, src, dst, config)


def test_wrong_password_is_a_cluster_error_naming_the_refusal_not_the_password(
    secure_cluster: SecureCluster,
) -> None:
    s = secure_cluster
    wrong = "Wrong-" + s.password
    config = mirror_config(s.sasl_ssl, s.mtls, sasl(s, wrong), mtls(s))
    copier = BatchCopier(config, ProgressBook())
    try:
        # Usually "refused us: <SASL error>"; on a starved machine the broker's close can beat
        # its SaslAuthenticate response and kafka-python sees only disconnects ("did not
        # answer"). Either way: a ClusterError (exit 3) that never shows the password.
        with pytest.raises(
            ClusterError, match=r"source cluster .* (refused us|did not answer)"
        ) as err:
            copier.step(0.1)
    finally:
        copier.close()
    assert s.password not in str(err.value) and wrong not in str(err.value)

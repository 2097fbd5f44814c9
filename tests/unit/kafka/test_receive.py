"""kafka-python's receive path with kmirror's two copies fewer (kmirror.kafka.receive) decodes a
fetch response to the same records, byte for byte, whatever chunks the socket hands over; its
socket read hands on everything waiting, byte for byte, and the errors kafka-python expects."""

from __future__ import annotations

import contextlib
import random
import socket
import ssl
from pathlib import Path
from typing import Any

import kafka.errors as kerrors
import pytest
from kafka.net.transport import KafkaSSLTransport, KafkaTCPTransport
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.frame import KafkaBytes
from kafka.protocol.parser import KafkaProtocol

from kmirror.kafka import receive
from tests.securecluster import Pki

pytestmark = pytest.mark.unit

receive.install()


def fetch_frame(protocol: KafkaProtocol, records: list[bytes]) -> bytes:
    """A framed fetch response (one partition per records value) to a request sent on
    `protocol`, as a broker would write it to the socket."""
    request = FetchRequest(
        version=12,
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=1,
        session_id=0,
        session_epoch=-1,
        topics=[],
        forgotten_topics_data=[],
        rack_id="",
    )
    correlation_id = protocol.send_request(request)
    topic = FetchResponse.FetchableTopicResponse
    partitions = [
        topic.PartitionData(
            partition_index=i,
            error_code=0,
            high_watermark=10,
            last_stable_offset=10,
            log_start_offset=0,
            aborted_transactions=[],
            preferred_read_replica=-1,
            records=value,
        )
        for i, value in enumerate(records)
    ]
    response = FetchResponse(
        version=12,
        throttle_time_ms=0,
        error_code=0,
        session_id=0,
        responses=[topic(topic="t", partitions=partitions)],
    )
    response.with_header(correlation_id=correlation_id)
    return bytes(response.encode(framed=True, header=True))


@pytest.mark.parametrize("chunk", [1, 3, 4, 333, 4096, 1 << 20])
def test_a_fetch_response_in_any_chunks_decodes_to_the_same_records(chunk: int) -> None:
    rng = random.Random(chunk)
    records = [rng.randbytes(n) for n in (0, 1, 61, 5000, 70_000)]
    protocol = KafkaProtocol(client_id="t")
    # Two responses back to back, the second starting inside a chunk of the first.
    frames = fetch_frame(protocol, records) + fetch_frame(protocol, records[::-1])
    decoded = []
    for i in range(0, len(frames), chunk):
        decoded += protocol.receive_bytes(frames[i : i + chunk])
    assert [cid for cid, _ in decoded] == [1, 2]
    for (_, response), expected in zip(decoded, (records, records[::-1]), strict=True):
        got = [p.records for p in response.responses[0].partitions]
        assert got == expected
        assert all(type(value) is bytes for value in got)


def test_read_keeps_kafka_bytes_contract() -> None:
    buffer = KafkaBytes(10)
    buffer.write(b"0123456789")
    buffer.seek(2)
    assert buffer.read(3) == b"234" and buffer.tell() == 5
    assert buffer.read(100) == b"56789" and buffer.tell() == 10
    assert buffer.read() == b"" and buffer.tell() == 10
    buffer.seek(0)
    assert buffer.read() == b"0123456789"
    buffer.write(b"x")  # the buffer is not held by a view any more: it may grow
    assert len(buffer) == 11


def test_install_is_idempotent_and_the_batch_paths_event_loop_installs_it() -> None:
    from kmirror.kafka.wire import selector

    wrapped = KafkaProtocol.receive_bytes
    selector().close()
    assert KafkaProtocol.receive_bytes is wrapped
    assert KafkaBytes.read is receive._read


class _Connection:
    """What ``_recv`` uses of kafka-python's connection (the transport's protocol)."""

    def __init__(self, parser: KafkaProtocol) -> None:
        self.parser = parser


class _Transport:
    """What ``_recv`` uses of kafka-python's transport: the socket, and its connection's
    parser when there is one."""

    def __init__(self, sock: socket.socket, parser: KafkaProtocol | None = None) -> None:
        self._sock = sock
        self._protocol = None if parser is None else _Connection(parser)


@pytest.mark.parametrize("size", [0, 1, 4096, 1 << 20, 3 * (1 << 20) + 17])
def test_the_socket_is_read_whole_in_large_pieces_byte_for_byte(size: int) -> None:
    """Everything waiting on the socket comes back, the same bytes in order, up to 1 MiB per
    call (kafka-python read it 4 KB per call), and nothing once it is all read."""
    rng = random.Random(size)
    data = rng.randbytes(size)
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    try:
        theirs.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        transport = _Transport(ours)
        got = b""
        sent = 0
        while sent < size or len(got) < size:
            if sent < size:
                sent += theirs.send(data[sent : sent + (1 << 20)])
            chunk, err = receive._recv(transport)
            assert err is None
            got += chunk  # a copy: a view of the transport's buffer lives until its next read
        assert got == data
        chunk, err = receive._recv(transport)
        assert (bytes(chunk), err) == (b"", None)  # nothing waiting: no error
    finally:
        ours.close()
        theirs.close()


def tls_pair(tmp_path: Path) -> tuple[ssl.SSLSocket, ssl.SSLSocket]:
    """A connected TLS socket pair, both ends non-blocking: (ours, the broker's)."""
    pki = Pki.create(tmp_path)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(pki.dir / "broker.pem", pki.dir / "broker.key")
    client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client.load_verify_locations(pki.ca)
    a, b = socket.socketpair()
    a.setblocking(False)
    b.setblocking(False)
    ours = client.wrap_socket(a, server_hostname="localhost", do_handshake_on_connect=False)
    theirs = server.wrap_socket(b, server_side=True, do_handshake_on_connect=False)
    pending = [ours, theirs]
    while pending:
        for end in list(pending):
            try:
                end.do_handshake()
                pending.remove(end)
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                pass
    return ours, theirs


@pytest.mark.parametrize("piece", [1000, 70_000, 1 << 20])
@pytest.mark.parametrize("tls", [False, True], ids=["plain", "tls"])
def test_large_responses_are_read_straight_into_their_buffers_byte_for_byte(
    piece: int, tls: bool, tmp_path: Path
) -> None:
    """Three fetch responses (two of megabytes) and a small one, written to the socket in
    `piece`-byte writes: each decodes to its records byte for byte, in order, and nearly all of
    the large ones' bytes went straight into the responses' buffers, not through ours (over
    TLS too, where each call reads until the TLS layer holds nothing more)."""
    rng = random.Random(piece)
    protocol = KafkaProtocol(client_id="t")
    payloads = [
        [rng.randbytes(n) for n in (3_000_000, 0, 5)],
        [rng.randbytes(40)],
        [rng.randbytes(n) for n in (200_000, 1_500_000)],
    ]
    stream = b"".join(fetch_frame(protocol, records) for records in payloads)
    ours: socket.socket
    theirs: socket.socket
    if tls:
        ours, theirs = tls_pair(tmp_path)
    else:
        ours, theirs = socket.socketpair()
        ours.setblocking(False)
        theirs.setblocking(False)
    try:
        transport = _Transport(ours, protocol)
        decoded: list[tuple[int, Any]] = []
        handed = sent = 0
        while len(decoded) < len(payloads):
            if sent < len(stream):
                with contextlib.suppress(BlockingIOError, ssl.SSLWantWriteError):
                    sent += theirs.send(stream[sent : sent + piece])
            data, err = receive._recv(transport)
            assert err is None
            handed += len(data)
            decoded += protocol.receive_bytes(data)
        assert [cid for cid, _ in decoded] == [1, 2, 3]
        for (_, response), records in zip(decoded, payloads, strict=True):
            assert [p.records for p in response.responses[0].partitions] == records
        assert handed < len(stream) / 4
    finally:
        ours.close()
        theirs.close()


def test_a_closed_peer_is_the_error_kafka_python_expects() -> None:
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    theirs.sendall(b"last words")
    theirs.close()
    try:
        transport = _Transport(ours)
        chunk, err = receive._recv(transport)
        assert (bytes(chunk), err) == (b"last words", None)  # what came before the close
        # The socket stays readable: kafka-python's loop calls again and meets the close.
        chunk, err = receive._recv(transport)
        assert bytes(chunk) == b""
        assert isinstance(err, kerrors.KafkaConnectionError)
    finally:
        ours.close()


def test_both_transports_read_through_recv() -> None:
    receive.install()
    assert KafkaTCPTransport._sock_recv is receive._recv
    assert KafkaSSLTransport._sock_recv is receive._recv

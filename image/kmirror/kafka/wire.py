"""Connections to one cluster for the batch path: kafka-python's connection manager (TCP, TLS,
SASL, API version negotiation, metadata) on a selector shared by both clusters, so one
``poll`` serves fetch responses from the source and produce responses from the target.

Requests are kafka-python's protocol classes (generated from Kafka's JSON schemas); nothing
here encodes a request by hand. The copier drives the selector from its own thread: no IO
thread, no locks.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import kafka.errors as kerrors
from kafka.future import Future
from kafka.net.manager import KafkaConnectionManager
from kafka.net.selector import NetworkSelector
from kafka.structs import TopicPartition

from kmirror.errors import ClusterError
from kmirror.kafka import receive

log = logging.getLogger(__name__)


# kafka-python warns when one step of its event loop takes over 0.1 s, for an application
# whose other pollers would starve. Here one thread drives the loop and a step is the decoding
# of a whole fetch response (wall time: waiting for a core included): 0.1-0.4 s for megabytes of
# small batches (`mixed` on a busy 2-core machine), a dozen "blocking the event loop -- likely a
# tight sync loop" warnings a second through a catch-up, about nothing. Seconds still mean a
# stuck loop.
SLOW_STEP_S = 5.0


def selector() -> Any:
    """The event loop both clusters' connections share (kafka-python's receive path without
    its extra copies first: kmirror.kafka.receive)."""
    receive.install()
    return NetworkSelector(slow_task_threshold_secs=SLOW_STEP_S)


class _Manager(KafkaConnectionManager):  # type: ignore[misc]
    """Remembers why a connection was refused. kafka-python keeps a refused login only for
    broker connections, not for bootstrap ones, and retries those until its timeout."""

    refusal: BaseException | None = None

    def get_connection(self, node_id: Any, *args: Any, **kwargs: Any) -> Any:
        conn = super().get_connection(node_id, *args, **kwargs)
        conn.init_future.add_errback(self._note)
        return conn

    def _note(self, exc: BaseException) -> None:
        text = str(exc)
        if isinstance(exc, (kerrors.SaslAuthenticationFailedError, kerrors.AuthorizationError)) or (
            "Handshake failed" in text and ("CERTIFICATE" in text.upper() or "alert" in text)
        ):
            self.refusal = exc


class Link:
    """One cluster: bootstrap, metadata for the topics we use, leaders, requests."""

    def __init__(self, net: Any, side: str, args: dict[str, Any]) -> None:
        self.side = side
        self._net = net
        self._bootstrap = ",".join(args["bootstrap_servers"])
        self._manager = _Manager(net, **args)
        # Metadata requests must never create a topic with the broker's defaults: the mirror
        # creates target topics with the source's layout (topics.py).
        self._manager.cluster.config["allow_auto_create_topics"] = False
        self._topics: set[str] = set()

    def bootstrap(self, timeout_s: float) -> None:
        """The cluster answered a metadata request, or a ClusterError naming why not."""
        if self._manager.bootstrapped:
            return
        deadline = time.monotonic() + timeout_s
        future = self._manager.bootstrap_async(timeout_ms=int(timeout_s * 1000))
        # In steps: a refused password or certificate is final, no need to wait it out.
        while not future.is_done and not self.auth_failure() and time.monotonic() < deadline:
            self._net.poll(timeout_ms=200, future=future)
        refused = self.auth_failure()
        if refused is None and future.succeeded():
            return
        failed = future.exception or f"no answer within {timeout_s:.0f} s"
        why = f"refused us: {refused}" if refused else f"did not answer ({failed})"
        raise ClusterError(
            f"the {self.side} cluster at {self._bootstrap} {why}. Check the bootstrap "
            "servers, the network and the security settings (security.protocol, TLS CA "
            "and client certificate, SASL mechanism, user and password)"
        )

    def want(self, topics: set[str]) -> None:
        """Track metadata (leaders) for these topics."""
        if not topics <= self._topics:
            self._topics |= topics
            self._manager.cluster.set_topics(sorted(self._topics))

    def refresh(self) -> None:
        """Leaders moved (or a broker went away): ask for metadata again, soon."""
        self._manager.cluster.request_update()

    def leader(self, topic: str, partition: int) -> int | None:
        """The partition's leader node id, None while unknown or leaderless."""
        node = self._manager.cluster.leader_for_partition(TopicPartition(topic, partition))
        return None if node is None or node < 0 else int(node)

    def leader_epoch(self, topic: str, partition: int) -> int:
        epoch = self._manager.cluster.leader_epoch_for_partition(TopicPartition(topic, partition))
        return -1 if epoch is None else int(epoch)

    def any_node(self) -> int | None:
        node = self._manager.least_loaded_node()
        return None if node is None else int(node)

    def send(self, node: int, request: Any) -> Future:
        """Send now (or once connected); the future holds the response or the failure."""
        try:
            return self._manager.send(request, node_id=node)
        except kerrors.UnknownBrokerIdError as exc:
            # A node remembered from earlier (a transaction coordinator) that has left the
            # metadata, e.g. a killed broker: kafka-python raises where a node that is merely
            # not ready gives a failed future. Callers retry failed futures (elsewhere).
            self.refresh()
            return Future().failure(exc)

    def in_flight(self, node: int) -> int:
        conn = self._manager._conns.get(node)
        return 0 if conn is None else len(conn.in_flight_requests)

    def auth_failure(self) -> str | None:
        failures = list(self._manager._auth_failures.values()) or [self._manager.refusal]
        return None if failures[0] is None else str(failures[0])

    def close(self) -> None:
        self._manager.close()

"""Records written to source topics at a steady rate while a test acts on a running mirror."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from confluent_kafka import Producer


class Feeder(threading.Thread):
    """Writes value `<topic>-<i>` (key `k<i>`) to each topic, alternating over `partitions`,
    at `rate` records per second per topic, until stopped; `stop_and_flush` waits for every
    record to be on the source."""

    def __init__(
        self, bootstrap: str, topics: Sequence[str], rate: float = 200, partitions: int = 2
    ) -> None:
        super().__init__(daemon=True)
        self._halt = threading.Event()
        self.errors: list[str] = []
        self.sent = 0
        self._servers, self._topics = bootstrap, list(topics)
        self._rate, self._partitions = rate, partitions

    def run(self) -> None:
        producer = Producer(
            {"bootstrap.servers": self._servers, "enable.idempotence": True, "linger.ms": 5}
        )
        i, started = 0, time.monotonic()
        while not self._halt.is_set():
            for topic in self._topics:
                producer.produce(
                    topic,
                    key=b"k%d" % i,
                    value=f"{topic}-{i}".encode(),
                    partition=i % self._partitions,
                    on_delivery=lambda err, msg: err and self.errors.append(str(err)),
                )
            producer.poll(0)
            i += 1
            self.sent = i
            ahead = i / self._rate - (time.monotonic() - started)
            if ahead > 0:
                time.sleep(ahead)
        left = producer.flush(60)
        if left:
            self.errors.append(f"{left} record(s) not delivered to the source")

    def stop_and_flush(self) -> None:
        self._halt.set()
        self.join(90)
        assert not self.errors, self.errors[:5]

"""Exactly-once delivery of a Kafka sink: each micro-batch in one Kafka
transaction, tied to that micro-batch (ksqlDB's ``exactly_once_v2``).

Spark's Kafka writer has no transactions, so the sink's records go through
confluent-kafka's transactional producer, from the process that runs the
micro-batch's function (the driver; the server's Python worker under Spark
Connect). The micro-batch is tied to its transaction by an offset committed
inside it: the consumer group ``splice-sink-<app>`` (the checkpoint's app
id) gets offset ``batch id + 1`` on the output topic's partition 0, in the
same transaction as the records (``send_offsets_to_transaction``), so the
records and the mark are committed together or not at all. Before it sends
a batch, the sink starts its producer under the transactional id
``splice-sink-<app>``: the broker then finishes or aborts any transaction
an earlier, killed producer of that id left open (and fences that
producer). Then the mark answers whether the batch was committed:

- killed inside the transaction (``KillPoint.SINK_SENDING``): the broker
  aborts it; a ``read_committed`` consumer never sees its records; the
  rerun sends the batch in a new transaction;
- killed after the commit (``KillPoint.SINK_SENT``): the rerun finds the
  mark and sends nothing.

Records are produced in the micro-batch's order (one partition, sorted as
the sink sorts it), with Java's key partitioner (murmur2), so a key lands
on the partition Spark's Kafka writer, ksqlDB and Kafka Streams choose.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Mapping
from typing import Any

from splice.engine.faults import KillPoint, reached
from splice.operators.sources import SourceError

TIMEOUT = 30.0
# A producer's own settings Splice sets; a statement's kafka.* ones may not
# replace them.
OWN = ("bootstrap.servers", "transactional.id", "enable.idempotence", "partitioner")


def transactional_id(app: str) -> str:
    """The producer's transactional id (and the mark's consumer group) of
    the sink whose checkpoint has app id ``app``."""
    return f"splice-sink-{app}"


class TransactionalSender:
    """One sink query's producer, started on first use and kept for its
    micro-batches. Pickled without it (a Spark Connect server unpickles
    the micro-batch's function in its own worker)."""

    def __init__(self, servers: str, topic: str, app: str, step_id: str,
                 extra: Mapping[str, str]) -> None:
        self.servers, self.topic, self.app, self.step_id = servers, topic, app, step_id
        self.extra = dict(extra)
        self._producer: Any = None
        self._consumer: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_producer": None, "_consumer": None}

    def send(self, batch_id: int, records: Iterable[tuple[Any, Any]]) -> bool:
        """Send ``records`` ((key, value) pairs; a None value is a
        tombstone) in one transaction marked with ``batch_id``, unless a
        transaction of that mark was committed before. True when sent now."""
        from confluent_kafka import KafkaException, TopicPartition

        producer = self._ready()
        if self.committed() > batch_id:
            return False
        producer.begin_transaction()
        try:
            for key, value in records:
                self._produce(producer, key, value)
            producer.flush(TIMEOUT)  # on the broker, in the open transaction
            reached(KillPoint.SINK_SENDING, self.step_id)
            mark = [TopicPartition(self.topic, 0, batch_id + 1)]
            producer.send_offsets_to_transaction(
                mark, self._consumer.consumer_group_metadata(), TIMEOUT)
            producer.commit_transaction(TIMEOUT)
        except KafkaException as err:
            self._abort(producer)
            raise SourceError(
                f"output topic '{self.topic}' (step '{self.step_id}'): the Kafka transaction of "
                f"micro-batch {batch_id} failed: {err.args[0].str()}; nothing of it is "
                "visible to read_committed consumers, and the next run sends it again") from None
        except BaseException:
            self._abort(producer)
            raise
        return True

    def committed(self) -> int:
        """The mark: one past the last micro-batch committed (0: none). A
        group coordinator that is not ready (a broker's first group: its
        offsets topic is being created) is asked again, for up to
        ``TIMEOUT`` seconds."""
        from confluent_kafka import KafkaError, KafkaException, TopicPartition

        not_ready = {KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                     KafkaError.COORDINATOR_NOT_AVAILABLE}
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                (part,) = self._consumer.committed([TopicPartition(self.topic, 0)],
                                                   timeout=TIMEOUT)
                return max(part.offset, 0)
            except KafkaException as err:
                error = err.args[0]
                if ((not error.retriable() and error.code() not in not_ready)
                        or time.monotonic() > deadline):
                    raise
                time.sleep(0.2)

    def _ready(self) -> Any:
        if self._producer is None:
            from confluent_kafka import Consumer, KafkaException, Producer

            settings = {k: v for k, v in self.extra.items() if k not in OWN}
            ident = transactional_id(self.app)
            try:
                producer = Producer({
                    **settings, "bootstrap.servers": self.servers, "transactional.id": ident,
                    "enable.idempotence": True, "partitioner": "murmur2_random",
                    "linger.ms": 5, "log_level": 0})
                producer.init_transactions(TIMEOUT)
                self._consumer = Consumer({
                    **settings, "bootstrap.servers": self.servers, "group.id": ident,
                    "enable.auto.commit": False, "isolation.level": "read_committed",
                    "log_level": 0})
            except KafkaException as err:
                raise SourceError(
                    f"output topic '{self.topic}' (step '{self.step_id}'): the transactional "
                    f"producer '{ident}' did not start: {err.args[0].str()}; exactly-once "
                    "delivery needs a broker with transactions (Kafka 2.5 or later), or set "
                    "SPLICE_PROCESSING_GUARANTEE=at_least_once") from None
            self._producer = producer
        return self._producer

    def _produce(self, producer: Any, key: Any, value: Any) -> None:
        while True:
            try:
                producer.produce(self.topic, key=key, value=value)
                return
            except BufferError:  # the producer's queue is full: let it send
                producer.poll(0.05)

    @staticmethod
    def _abort(producer: Any) -> None:
        # A failed abort leaves the transaction to the broker, which aborts
        # it when it times out or the next producer of the id starts.
        with contextlib.suppress(Exception):
            producer.abort_transaction(TIMEOUT)

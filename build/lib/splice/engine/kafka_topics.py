"""Topics and records on a Kafka broker, through confluent-kafka's admin,
producer and consumer APIs (no Spark; the broker's jars have no CLI tools).
The Kafka source reads a topic's end offsets here (its run markers) and
creates a topic a ksqlDB statement declares with ``partitions``; the tests,
and whatever produces a case's or the demo's rows as records, produce here."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

TIMEOUT = 30.0


@dataclass(frozen=True)
class Record:
    """One record to produce. ``value`` None is a tombstone (a null value);
    a dict is written as JSON, a str or bytes as they are. ``key`` likewise
    (a str is the KAFKA key format; a dict, JSON). ``timestamp_ms`` None
    lets the producer stamp it; ``partition`` None lets the key pick."""

    value: Any
    key: Any = None
    timestamp_ms: int | None = None
    partition: int | None = None


def _admin(bootstrap: str):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})


def unanswered_brokers(bootstrap: str, seconds: float) -> str | None:
    """Why no broker of ``bootstrap`` answers a metadata request, Kafka's
    own protocol, within ``seconds``; None when one does. A TCP connect
    shows only that a port is open: a port of another server accepts it,
    and Spark's Kafka client then waits minutes for a node assignment."""
    from confluent_kafka import KafkaException

    admin = _admin(bootstrap)
    try:
        admin.list_topics(timeout=seconds)
    except KafkaException as err:
        return err.args[0].str()
    return None


def create_topic(bootstrap: str, name: str, partitions: int = 1,
                 compacted: bool = False, replication: int = 1) -> None:
    """Create ``name`` with ``partitions`` partitions, each kept on
    ``replication`` brokers; ``compacted``: the broker keeps the latest record of each key
    (``cleanup.policy=compact``), as for a table's topic."""
    from confluent_kafka.admin import NewTopic

    admin = _admin(bootstrap)  # kept alive until the result: its end cancels the request
    config = {"cleanup.policy": "compact"} if compacted else {}
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=replication, config=config)],
        operation_timeout=TIMEOUT)
    futures[name].result(TIMEOUT)


def topic_config(bootstrap: str, name: str) -> dict[str, str]:
    """The topic's configuration as the broker reports it."""
    from confluent_kafka.admin import ConfigResource

    admin = _admin(bootstrap)  # kept alive until the result
    resource = ConfigResource("topic", name)
    entries = admin.describe_configs([resource])[resource].result(TIMEOUT)
    return {key: entry.value for key, entry in entries.items()}


def delete_topic(bootstrap: str, name: str) -> bool:
    """Delete ``name``; False when there was no such topic. The broker
    finishes the deletion in the background."""
    from confluent_kafka import KafkaError, KafkaException

    admin = _admin(bootstrap)
    futures = admin.delete_topics([name], operation_timeout=TIMEOUT)
    try:
        futures[name].result(TIMEOUT)
    except KafkaException as err:
        if err.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            return False
        raise
    return True


def add_partitions(bootstrap: str, name: str, total: int) -> None:
    """Grow ``name`` to ``total`` partitions."""
    from confluent_kafka.admin import NewPartitions

    admin = _admin(bootstrap)
    futures = admin.create_partitions([NewPartitions(name, total)], operation_timeout=TIMEOUT)
    futures[name].result(TIMEOUT)


def _bytes(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    return json.dumps(value).encode()


def produce(bootstrap: str, topic: str, records: Iterable[Record]) -> int:
    """Produce ``records`` in order (one in flight at a time per partition,
    idempotent producer: a partition keeps the order given) and wait until
    the broker acknowledged every one; the number produced."""
    from confluent_kafka import KafkaException, Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                         "linger.ms": 5, "log_level": 0})
    failures: list[str] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            failures.append(str(err))

    count = 0
    for record in records:
        extra: dict[str, Any] = {}
        if record.timestamp_ms is not None:
            extra["timestamp"] = record.timestamp_ms
        if record.partition is not None:
            extra["partition"] = record.partition
        while True:
            try:
                producer.produce(topic, value=_bytes(record.value), key=_bytes(record.key),
                                 on_delivery=delivered, **extra)
                break
            except BufferError:  # the client's queue is full: let it deliver some first
                producer.poll(0.1)
        count += 1
        if count % 10_000 == 0:
            producer.poll(0)  # serve delivery reports as we go
    left = producer.flush(TIMEOUT)
    if left or failures:
        raise KafkaException(f"{left} record(s) not delivered to {topic}: {failures[:3]}")
    return count


def topic_exists(bootstrap: str, topic: str) -> bool:
    meta = _admin(bootstrap).list_topics(topic=topic, timeout=TIMEOUT)
    found = meta.topics.get(topic)
    return found is not None and found.error is None


def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    """Each partition's end offset (the offset the next record gets); empty
    for a topic that does not exist."""
    return {p: high for p, (_, high) in watermarks(bootstrap, topic).items()}


def first_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    """Each partition's first offset the broker still has (the records
    before it were deleted); empty for a topic that does not exist."""
    return {p: low for p, (low, _) in watermarks(bootstrap, topic).items()}


def watermarks(bootstrap: str, topic: str) -> dict[int, tuple[int, int]]:
    """Each partition's (first, end) offsets."""
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "splice-offsets",
                         "log_level": 0})
    try:
        meta = consumer.list_topics(topic, timeout=TIMEOUT).topics[topic]
        if meta.error is not None:
            return {}
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                return {p: tuple(consumer.get_watermark_offsets(TopicPartition(topic, p),
                                                                timeout=TIMEOUT))
                        for p in sorted(meta.partitions)}
            except KafkaException as err:
                # A partition between leaders (a topic just created, a broker
                # restarting) answers NOT_LEADER_FOR_PARTITION for a moment.
                error = err.args[0]
                moving = error.code() in (KafkaError.NOT_LEADER_FOR_PARTITION,
                                          KafkaError.LEADER_NOT_AVAILABLE,
                                          KafkaError.UNKNOWN_TOPIC_OR_PART)
                if not (moving or error.retriable()) or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    finally:
        consumer.close()

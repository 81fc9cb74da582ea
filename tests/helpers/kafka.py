"""What the Kafka tests share beyond the broker fixture: a user's broker
deleting records a pipeline has not read yet, and a topic read back as a
consumer reads it."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from splice.engine.kafka_topics import Record, end_offsets, first_offsets, produce


def retention_ms(bootstrap: str, topic: str, ms: int) -> None:
    """The topic's time retention (the suite's broker keeps every record;
    -1: forever)."""
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

    admin = AdminClient({"bootstrap.servers": bootstrap})
    entry = ConfigEntry("retention.ms", str(ms),
                        incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource("topic", topic, incremental_configs=[entry])
    admin.incremental_alter_configs([resource])[resource].result(30)


def delete_unread(bootstrap: str, topic: str, old: list[Record]) -> dict[int, int]:
    """Give ``topic`` a 1 s retention, produce ``old`` (records stamped long
    ago), wait until the broker's retention check (every second) has
    deleted every record of the topic; each partition's first offset then.
    The retention stays (``retention_ms(..., -1)`` keeps what comes next)."""
    retention_ms(bootstrap, topic, 1000)
    produce(bootstrap, topic, old)
    end = end_offsets(bootstrap, topic)
    deadline = time.monotonic() + 30
    while first_offsets(bootstrap, topic) != end and time.monotonic() < deadline:
        time.sleep(0.5)
    return first_offsets(bootstrap, topic)


def delete_records(bootstrap: str, topic: str, before: dict[int, int]) -> None:
    """Delete each partition's records below ``before[partition]``, as a
    user's ``kafka-delete-records`` does."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    wanted = [TopicPartition(topic, p, offset) for p, offset in before.items()]
    for done in admin.delete_records(wanted).values():
        done.result(30)


def consumed(bootstrap: str, topic: str, committed: bool = True) -> list[tuple[str, Any]]:
    """(key text, value as a dict or None) of every record of ``topic``, in
    offset order per partition, as confluent-kafka's consumer reads them:
    ``read_committed`` (records of aborted transactions left out), else
    ``read_uncommitted`` (every record the broker has)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    level = "read_committed" if committed else "read_uncommitted"
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"test-{uuid.uuid4().hex}",
                         "isolation.level": level, "enable.auto.commit": False,
                         "log_level": 0})
    try:
        parts = sorted(consumer.list_topics(topic, timeout=30).topics[topic].partitions)
        # The end each read stops at: read_committed's is the last stable offset.
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
                for p in parts}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
        got: dict[int, list[tuple[str, Any]]] = {p: [] for p in parts}
        deadline = time.monotonic() + 60
        while any(consumer.position([TopicPartition(topic, p)])[0].offset < ends[p]
                  for p in parts if ends[p] > 0) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue
            value = message.value()
            key = message.key()
            got[message.partition()].append(
                (None if key is None else key.decode(),
                 None if value is None else json.loads(value)))
        return [record for p in parts for record in got[p]]
    finally:
        consumer.close()

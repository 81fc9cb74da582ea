"""What the Kafka tests share beyond the broker fixture: a user's broker
deleting records a pipeline has not read yet."""

from __future__ import annotations

import time

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

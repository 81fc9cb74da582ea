"""A Kafka source's records deleted by the broker before a run read them.

Spark's Kafka source stops such a run (``failOnDataLoss`` stays on:
nothing is skipped silently, LANGUAGE.md), with the Kafka client's words
(``OffsetOutOfRangeException: Fetch position FetchPosition{offset=3, ...}
is out of range for partition orders-0``) or Spark's. This says it the
way a user can act on: which topic, partition and offset, the first offset
the broker still has, and the topic's retention settings that deleted
them (time retention goes by the records' Kafka timestamps, so records
stamped long ago go at the broker's next check).
"""

from __future__ import annotations

import re

from splice.engine.errors import Cause
from splice.engine.kafka_topics import first_offsets, topic_config
from splice.engine.settings import ENV

# Texts of Spark's and the Kafka client's data-loss failures.
_LOST = ("OffsetOutOfRange", "some data may have been", "Cannot fetch offset",
         "Could not read records in offset")
_OFFSET = re.compile(r"offset[= ]\[?(\d+)")
_RETENTION = ("cleanup.policy", "retention.ms", "retention.bytes")


# Spark's words for a partition that now ends before where the query reads on.
_CHANGED = re.compile(r"Partition \S+-(\d+) offset was changed from (\d+) to (\d+)")


def created_again(name: str, topic: str, partition: int, end: int, at: int) -> str:
    """Why source ``name`` cannot go on reading ``topic`` whose
    ``partition`` ends at ``end``, before ``at`` where its checkpoint reads
    on, and what to do."""
    return (f"source '{name}' cannot read topic '{topic}' on: partition {partition} ends at "
            f"offset {end}, before offset {at} where its checkpoint reads on, so the topic was "
            "deleted and created again (or its log cut back, as an unclean leader election "
            "does); going on would skip its new records. Read the topic afresh: splice run "
            f"PIPELINE --rebuild {name} (the source and every step after it are rebuilt)")


def lost_records(name: str, topic: str, servers: str, cause: Cause,
                 remedy: str | None = None) -> str | None:
    """The failure ``cause`` of source ``name`` reading ``topic`` from
    ``servers`` in words, when it is records the broker deleted (or a topic
    created again); None otherwise. ``remedy``: how to go on without them,
    when not by skipping (a source read in place)."""
    text = f"{cause.summary}\n{cause.detail}"
    if not any(marker.lower() in text.lower() for marker in _LOST):
        return None
    changed = _CHANGED.search(text)
    if changed and int(changed.group(3)) < int(changed.group(2)):
        partition, at, end = (int(g) for g in changed.groups())
        return created_again(name, topic, partition, end, at)
    found = re.search(re.escape(topic) + r"-(\d+)\b", text)
    partition = int(found.group(1)) if found else None
    offset = _OFFSET.search(text)
    where = f"topic '{topic}'" + (f" partition {partition}" if partition is not None else "")
    start = f" from offset {offset.group(1)}" if offset else ""
    first, retention = _broker_side(topic, servers, partition)
    return (f"source '{name}' cannot read {where}{start}: the broker no longer has those "
            f"records{first}, deleted by the topic's retention ({retention}time retention "
            "goes by the records' Kafka timestamps, so records stamped long ago are deleted "
            "at the broker's next check). Splice stops rather than skip records (Spark's "
            "failOnDataLoss): keep a topic's records until Splice has read them (a longer "
            "retention.ms or retention.bytes on the topic, or more frequent runs). Records "
            "already deleted cannot be read again: to go on without them, " + (remedy or (
                f"run with {ENV['kafka_lost_records']}=skip (Dagster: SparkResource's "
                "kafka_lost_records), which writes each deleted range to the source's dead "
                "letter")))


def _broker_side(topic: str, servers: str, partition: int | None) -> tuple[str, str]:
    """(the partition's first offset now, the topic's retention settings) as
    text; empty when the broker does not answer."""
    try:
        firsts = first_offsets(servers, topic)
        config = topic_config(servers, topic)
    except Exception:  # KafkaException, a broker gone since: the rest still says it
        return "", ""
    first = (f" (its first record is now at offset {firsts[partition]})"
             if partition in firsts else "")
    settings = ", ".join(f"{key}={config[key]}" for key in _RETENTION if key in config)
    return first, f"{settings}; " if settings else ""

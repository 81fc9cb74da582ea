"""The sensor's view of a Kafka source (engine/source_state.py): its marker
is the topic's end offsets, so new records on the topic start a run."""

from __future__ import annotations

import json
import uuid

import pytest
from splice.engine.kafka_topics import Record, create_topic, produce
from splice.engine.settings import SettingsError, Warehouse
from splice.engine.source_state import source_marker
from splice.runtime.compile import compile_text

pytestmark = pytest.mark.kafka


def test_the_marker_of_a_topic_moves_with_its_records(kafka, monkeypatch) -> None:
    topic = f"marker-{uuid.uuid4().hex[:8]}"
    create_topic(kafka, topic, partitions=2)
    pipeline = compile_text(
        f"CREATE STREAM s (id INT) WITH (format='kafka', topic='{topic}', key='id');\n"
        "INSERT INTO out SELECT STREAM id FROM s;\n", file="m.sql", name="m")
    source = pipeline.sources["s"]
    warehouse = Warehouse(root="unused")
    monkeypatch.delenv("SPLICE_KAFKA_BOOTSTRAP", raising=False)
    with pytest.raises(SettingsError, match="set SPLICE_KAFKA_BOOTSTRAP=host:port"):
        source_marker(warehouse, source)
    monkeypatch.setenv("SPLICE_KAFKA_BOOTSTRAP", kafka)
    empty = source_marker(warehouse, source)
    assert source_marker(warehouse, source) == empty
    produce(kafka, topic, [Record({"id": 1}, key="1")])
    moved = source_marker(warehouse, source)
    assert moved != empty
    assert sum(int(v) for v in json.loads(moved).values()) == 1


def test_storage_formats_for_a_cluster_id_that_begins_with_a_dash(tmp_path) -> None:
    """Kafka's own StorageTool, run as the broker's start runs it, with the
    kind of id that once failed CI ("argument --cluster-id/-t: expected one
    argument"): its log dir must come out formatted for that id."""
    from splice.testing.kafka_broker import _properties, fetch_jars, format_storage

    props = tmp_path / "server.properties"
    props.write_text(_properties(tmp_path, 9092, 9093))
    format_storage(props, "-" + "A" * 21, fetch_jars())
    meta = (tmp_path / "data" / "meta.properties").read_text()
    assert "cluster.id=-" + "A" * 21 in meta

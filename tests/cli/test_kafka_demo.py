"""``splice demo --kafka``: the demo's data produced to two topics, the
demo's join pipeline reading them in ksqlDB's words (examples/kafka_demo),
the same rows out as the plain demo, the bad order in the dead letter with
its topic, partition and offset."""

from __future__ import annotations

from pathlib import Path

import pytest

from splice.cli import main

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


def _rows(spark, path: Path, *columns: str) -> list[tuple]:
    return sorted((tuple(r[c] for c in columns)
                   for r in spark.read.format("delta").load(str(path)).collect()), key=repr)


def test_the_demo_over_kafka_gives_the_demos_rows(spark, kafka, tmp_path: Path, monkeypatch,
                                                  capsys) -> None:
    monkeypatch.setenv("SPLICE_KAFKA_BOOTSTRAP", kafka)
    warehouse = tmp_path / "wh"
    for _ in range(2):  # a second demo starts afresh: topics and warehouse
        assert main(["demo", "--kafka", "--warehouse", str(warehouse)]) == 0
        out = capsys.readouterr().out
        assert f"output orders_enriched (stream) at {warehouse}/orders_enriched: 3 rows" in out
        assert f"output orders_matched (stream) at {warehouse}/orders_matched: 2 rows" in out
        assert _rows(spark, warehouse / "orders_matched", "name", "item") == [
            ("John", "Computer"), ("John", "Mouse")]
        assert _rows(spark, warehouse / "orders_enriched", "name", "item") == [
            ("John", "Computer"), ("John", "Mouse"), (None, "Keyboard")]
        dead = warehouse / "_splice" / "kafka_demo" / "dead_letter" / "orders"
        assert _rows(spark, dead, "topic", "partition", "offset") == [("demo_orders", 0, 3)]

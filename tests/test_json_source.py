"""JSON-lines sources: bad records go to the dead-letter table with a reason,
and the run goes on."""

from __future__ import annotations

import os

import pytest

from engine.runner import run_pipeline
from tests.pipeline_helpers import append, make_io, output_rows

pytestmark = pytest.mark.spark

SQL = """
CREATE STREAM customers (id INT, name STRING) WITH (location='customers', key='id');
CREATE STREAM orders (id INT, customer_id INT, item STRING, ts TIMESTAMP)
  WITH (location='orders', format='json', key='id', timestamp='ts');
WITH customersTable AS (SELECT TABLE * FROM customers);
INSERT INTO result SELECT STREAM customersTable.name, orders.item, orders.ts
FROM orders LEFT JOIN customersTable ON customersTable.id = orders.customer_id;
"""


def test_bad_json_records_go_to_dead_letter_with_reason(spark, warehouse) -> None:
    io = make_io(spark, warehouse, SQL, name="json")
    append(io, "customers", [{"id": 1, "name": "John"}])
    append(io, "orders", [
        {"id": 1, "customer_id": 1, "item": "Computer", "ts": "2024-01-01 00:00:00"},
        {"id": 2, "customer_id": "three", "item": "Mouse", "ts": "2024-01-01 00:00:01"},
        {"id": 3, "customer_id": 1, "item": "Screen"},
    ])
    folder = warehouse.source_path("orders")
    with open(os.path.join(folder, "broken.json"), "w") as fh:
        fh.write('{"id": 4, "customer_id": 1, "item": \n')
    reports = {r.step_id: r for r in run_pipeline(io.pipeline, io)}

    assert output_rows(io, "result", "name", "item") == [("John", "Computer")]
    assert reports["orders"].dead_letters == 3
    dead = spark.read.format("delta").load(warehouse.dead_letter_path("json", "orders"))
    reasons = sorted((r["reason"], r["source"]) for r in dead.collect())
    assert reasons == [
        ("column 'customer_id': 'three' is not INT", "orders"),
        ("missing event time 'ts'", "orders"),
        ("not a JSON object", "orders"),
    ]
    records = " ".join(r["record"] for r in dead.collect())
    assert '"three"' in records and '"Screen"' in records

    # The run went on, and the next one picks up new good records only.
    append(io, "orders", [{"id": 5, "customer_id": 1, "item": "Mouse",
                           "ts": "2024-01-01 00:00:05"}])
    reports = {r.step_id: r for r in run_pipeline(io.pipeline, io)}
    assert reports["orders"].dead_letters == 0
    assert output_rows(io, "result", "name", "item") == [("John", "Computer"),
                                                          ("John", "Mouse")]

"""The Kafka broker stopped under ``splice run`` and ``splice serve`` (a
broker of the test's own, in a temp folder, restarted on its port).

Stopped before a run reads the topic, the run ends in one message naming
the source and the brokers and saying a rerun is safe, exit 1, no
traceback. Stopped for 10 s while ``splice serve`` serves, and started
again, serve rides it out (Kafka's client reconnects), reads the records
that came after, and stops on SIGTERM with exit 0. Either way the rerun's
(and the served) outputs and dead letters equal an uninterrupted run's.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from splice.engine.io import StepIO
from splice.engine.kafka_topics import Record, create_topic, produce
from splice.engine.settings import SpliceSettings
from splice.resources.warehouse import WarehouseResource
from splice.runtime.compile import compile_text
from splice.runtime.runner import run_pipeline
from splice.runtime.workspace import Workspace

from splice.testing.kafka_broker import start_broker, stop_broker
from tests.conftest import child_env
from tests.helpers.crash_harness import differences, table_rows
from tests.helpers.faults import Child

pytestmark = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.faults]

SQL = """
CREATE STREAM orders (id INT, customer_id INT, item STRING) WITH (format='kafka',
  topic='{topic}', key='id');
CREATE STREAM customers (id INT, name STRING) WITH (location='customers', key='id');
WITH customersTable AS (SELECT TABLE * FROM customers);
INSERT INTO result
SELECT STREAM customersTable.name, orders.item
FROM orders LEFT JOIN customersTable ON customersTable.id = orders.customer_id;
"""


def _orders(n: int) -> list[Record]:
    rows: list[dict] = [{"id": 10 * n + i, "customer_id": 1 + i % 3, "item": f"i{n}-{i}"}
                        for i in range(4)]
    rows.append({"id": 10 * n + 9, "customer_id": "x", "item": "bad"})  # a dead letter
    return [Record(r, str(r["id"])) for r in rows]


def _io(spark, root: Path, sql: str, bootstrap: str) -> StepIO:
    pipeline = compile_text(sql, file="orders.sql", name="orders")
    return Workspace(pipeline, SpliceSettings.from_env(kafka_bootstrap=bootstrap),
                     warehouse=WarehouseResource(root=str(root)), spark=spark).io


def _customers(io: StepIO) -> None:
    from tests.helpers.pipeline import append

    append(io, "customers", [{"id": 1, "name": "Ann"}, {"id": 2, "name": "Bob"}])


@pytest.fixture
def broker(tmp_path: Path):
    folder = tmp_path / "broker"
    started = start_broker(folder)
    yield folder, started
    stop_broker(folder)


def test_a_broker_stopped_before_the_run_reads_is_one_message(spark, tmp_path, broker) -> None:
    folder, started = broker
    topic = f"orders-{uuid.uuid4().hex[:8]}"
    create_topic(started.bootstrap, topic, 2)
    produce(started.bootstrap, topic, _orders(0))
    sql = SQL.format(topic=topic)
    (tmp_path / "orders.sql").write_text(sql)
    reference = _io(spark, tmp_path / "reference", sql, started.bootstrap)
    stopped = _io(spark, tmp_path / "stopped", sql, started.bootstrap)
    for io in (reference, stopped):
        _customers(io)
    run_pipeline(reference.pipeline, reference)

    stop_broker(folder)
    run = Child(["run", str(tmp_path / "orders.sql"), "--warehouse", stopped.warehouse.root],
                child_env(SPLICE_KAFKA_BOOTSTRAP=started.bootstrap))
    code = run.wait(300)
    assert code == 1, run.text[-4000:]
    run.assert_no_traceback()
    said = next(line for line in run.lines if line.startswith("splice: "))
    print(f"\n{said}")
    assert said.startswith("splice: step 'orders' (source, from "), said
    assert f"at {started.bootstrap}, but no broker there accepts a connection" in said
    assert "A rerun is safe" in said

    start_broker(folder, port=started.port)
    run_pipeline(stopped.pipeline, stopped, wait=0)
    assert differences(table_rows(reference), table_rows(stopped)) == {}
    assert table_rows(stopped)["dead_letter:orders"]


def test_serve_rides_out_a_broker_restart_and_stops_on_sigterm(spark, tmp_path, broker) -> None:
    folder, started = broker
    topic = f"orders-{uuid.uuid4().hex[:8]}"
    create_topic(started.bootstrap, topic, 2)
    produce(started.bootstrap, topic, _orders(0))
    sql = SQL.format(topic=topic)
    (tmp_path / "orders.sql").write_text(sql)
    served = _io(spark, tmp_path / "served", sql, started.bootstrap)
    _customers(served)
    serve = Child(["serve", str(tmp_path / "orders.sql"), "--warehouse",
                   served.warehouse.root, "--interval", "0.5", "--report-every", "2"],
                  child_env(SPLICE_KAFKA_BOOTSTRAP=started.bootstrap))
    try:
        serve.wait_for(lambda line: line.startswith("serving 'orders'"), 400)
        stop_broker(folder)
        time.sleep(10)
        start_broker(folder, port=started.port)
        produce(started.bootstrap, topic, _orders(1))
        serve.wait_for(lambda line: line.strip().startswith("result: 4 rows read in"), 300)
    finally:
        serve.signal_group(15)
    code = serve.wait(180)
    assert code == 0, serve.text[-4000:]
    serve.assert_no_traceback()

    reference = _io(spark, tmp_path / "reference", sql, started.bootstrap)
    _customers(reference)
    run_pipeline(reference.pipeline, reference)  # both rounds, uninterrupted
    run_pipeline(served.pipeline, served, wait=0)
    assert differences(table_rows(reference), table_rows(served)) == {}
    assert sum(table_rows(served)["dead_letter:orders"].values()) == 2

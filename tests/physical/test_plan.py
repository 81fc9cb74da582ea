"""The physical plan: compiling plans every step once, into the node the
registry runs; what each node reads; a step that cannot run is a positioned
error at compile time, and EXPLAIN still shows it."""

from __future__ import annotations

import pytest
import splice.physical.planner
from splice.physical.base import PhysicalPlan
from splice.physical.explain import explain_pipeline
from splice.runtime.compile import analyze_sources, compile_text
from splice.runtime.executors import EXECUTORS
from splice.sql.errors import SqlErrors

SQL = """
CREATE STREAM customers (id INT, name STRING) WITH (location='customers', key='id');
CREATE STREAM orders (id INT, customer_id INT, item STRING)
  WITH (format='json', location='orders', key='id');
WITH customersTable AS (SELECT TABLE * FROM customers);
WITH ordersStream AS (SELECT STREAM * FROM orders);
INSERT INTO enriched
SELECT STREAM customersTable.name, ordersStream.item
FROM ordersStream JOIN customersTable ON customersTable.id = ordersStream.customer_id;
INSERT INTO counts
SELECT TABLE customersTable.name, COUNT(*) AS total
FROM ordersStream JOIN customersTable ON customersTable.id = ordersStream.customer_id
GROUP BY customersTable.name;
"""


def test_compile_plans_every_step_once(monkeypatch) -> None:
    planned: list[str] = []
    real = splice.physical.planner.plan_step

    def counting(step, explainable=False):
        planned.append(step.id)
        return real(step, explainable)

    monkeypatch.setattr(splice.physical.planner, "plan_step", counting)
    plan = compile_text(SQL, "p.sql", "p")
    assert isinstance(plan, PhysicalPlan)
    assert sorted(planned) == sorted(s.id for s in plan.steps)
    assert set(plan.nodes) == {s.id for s in plan.steps}
    kinds = [plan.node(s.id).kind for s in plan.steps]
    assert kinds[:2] == ["source.delta", "source.json"]
    assert {"materialize", "join.lookup", "aggregate"} <= set(kinds)
    assert all(kind in EXECUTORS for kind in kinds)


def test_a_lookup_join_streams_its_stream_and_looks_the_table_up() -> None:
    plan = compile_text(SQL, "p.sql", "p")
    joins = [plan.node(s.id) for s in plan.steps if plan.node(s.id).kind == "join.lookup"]
    reads = joins[0].reads()
    assert reads.streamed == ("ordersStream_by_customer_id",)
    assert reads.looked_up == ("customersTable",)
    # the table materialization reads its input in arrival order
    materialize = next(plan.node(s.id) for s in plan.steps
                       if plan.node(s.id).kind == "materialize")
    assert materialize.reads().in_order == materialize.step.inputs
    assert plan.read_in_order(materialize.step.inputs[0])


CSV = "CREATE STREAM s (id INT) WITH (format='csv', location='s');\n" \
      "INSERT INTO o SELECT STREAM id FROM s;\n"


def test_a_format_without_a_reader_is_a_positioned_compile_error() -> None:
    with pytest.raises(SqlErrors) as err:
        compile_text(CSV, "c.sql", "c")
    assert str(err.value).startswith("c.sql:1:1: the csv source format is not supported yet")


def test_explain_shows_a_source_that_cannot_run_yet() -> None:
    text = explain_pipeline(analyze_sources([("c.sql", CSV)], "c"))
    assert "Source { kind: stream, key: string, format: csv, location: s" in text

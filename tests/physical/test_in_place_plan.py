"""A Kafka stream read in place (``stored='false'``), planned: which steps
may read it so, the positioned error for the rest, what EXPLAIN shows, and
the Dagster check that moves to the step that reads it. No Spark."""

from __future__ import annotations

import pytest
from dagster import AssetKey
from splice.orchestration.checks import DEAD_LETTERS, check_specs
from splice.physical.explain import explain_pipeline
from splice.runtime.compile import compile_text
from splice.sql.errors import SqlError, SqlErrors

ORDERS = ("CREATE STREAM orders (id INT, customer_id INT, ts TIMESTAMP) WITH (format='kafka', "
          "topic='orders', key='id', timestamp='ts'{more});\n")
PAYMENTS = ("CREATE STREAM payments (order_id INT, amount INT, ts TIMESTAMP) WITH "
            "(format='kafka', topic='payments', key='order_id', timestamp='ts');\n")
JOIN = ("INSERT INTO paid SELECT STREAM o.id, p.amount FROM orders o "
        "JOIN payments p WITHIN 1 MINUTE ON p.order_id = o.id;\n")
IN_PLACE = ", stored='false'"


def _refusal(sql: str) -> SqlError:
    with pytest.raises((SqlErrors, SqlError)) as caught:
        compile_text(sql, file="p.sql", name="p")
    err = caught.value
    errors = err.errors if isinstance(err, SqlErrors) else err.all()
    assert len(errors) == 1, errors
    return errors[0]


def test_a_stream_read_in_place_by_an_interval_join_has_no_table_and_says_so() -> None:
    plan = compile_text(ORDERS.format(more=IN_PLACE) + PAYMENTS + JOIN, file="p.sql", name="p")
    assert plan.node("orders").kind == "source.kafka.in_place"
    assert plan.node("payments").kind == "source.kafka"
    assert plan.step("orders").in_place and not plan.step("payments").in_place
    assert plan.read_in_place("paid") == ["orders"]
    text = explain_pipeline(plan)
    assert "stored: no: read in place by the step that reads it" in text
    # The reading step's asset checks the dead letters; the source's does not.
    paid = plan.outputs["paid"]
    assert {s.name for s in check_specs(paid, AssetKey("paid"), plan)} == {
        DEAD_LETTERS, "schema_matches_plan", "no_late_records_dropped"}
    assert check_specs(plan.step("orders"), AssetKey("orders"), plan) == []
    assert [s.name for s in check_specs(plan.step("payments"), AssetKey("p"), plan)] == [
        DEAD_LETTERS]


def test_a_stream_read_in_place_by_two_steps_is_refused_where_it_is_declared() -> None:
    err = _refusal(ORDERS.format(more=IN_PLACE) + PAYMENTS + JOIN
                   + "INSERT INTO ids SELECT STREAM id FROM orders;\n")
    assert (err.position.file, err.position.line, err.position.col) == ("p.sql", 1, 1)
    assert "source 'orders' is read in place (stored='false') but 2 steps read it" in err.rule
    assert err.fix.startswith("remove stored='false'")


def test_a_stream_read_in_place_for_a_table_materialization_is_refused() -> None:
    err = _refusal(ORDERS.format(more=IN_PLACE)
                   + "INSERT INTO latest SELECT TABLE * FROM orders;\n")
    assert "which cannot: only an interval join" in err.rule
    assert "a step depending on arrival order (a table materialization)" in err.rule


def test_stored_takes_true_or_false_and_a_table_topic_is_always_stored() -> None:
    err = _refusal(ORDERS.format(more=", stored='maybe'") + PAYMENTS + JOIN)
    assert err.rule == "stored must be 'true' or 'false', not 'maybe'"
    assert (err.position.line, err.position.col) != (1, 1)  # at the property itself
    err = _refusal("CREATE TABLE customers (id INT, name STRING) WITH (format='kafka', "
                   "topic='customers', key='id', stored='false');\n"
                   "INSERT INTO names SELECT TABLE id, name FROM customers;\n")
    assert err.rule == "a table topic is stored: its keys' latest rows are its table"
    plan = compile_text(ORDERS.format(more=", stored='true'") + PAYMENTS + JOIN,
                        file="p.sql", name="p")
    assert plan.node("orders").kind == "source.kafka"


def test_rebuilding_the_step_that_reads_in_place_rebuilds_the_source_too() -> None:
    """The source's dead letters live with its reader's checkpoint: a
    rebuild of the reader alone would read the topic afresh and write them
    twice, so the source is rebuilt with it."""
    from splice.engine.definitions import rebuild_targets

    plan = compile_text(ORDERS.format(more=IN_PLACE) + PAYMENTS + JOIN, file="p.sql", name="p")
    assert rebuild_targets(plan, ["paid"]) == ["orders", "paid"]
    stored = compile_text(ORDERS.format(more="") + PAYMENTS + JOIN, file="p.sql", name="p")
    assert rebuild_targets(stored, ["paid"]) == ["paid"]

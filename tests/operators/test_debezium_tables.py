"""Debezium change streams as tables (RisingWave's ``FORMAT DEBEZIUM ENCODE
JSON``), against the session's real broker: one change history written as
Debezium's envelopes and as upsert records gives the same rows through a
table-table join, a foreign-key join and a stream-table join, rows the
test writes out too; envelopes that cannot be read go to the dead letter."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from splice.engine.io import StepIO
from splice.engine.kafka_topics import Record, create_topic, produce
from splice.engine.settings import SpliceSettings
from splice.runtime.runner import run_pipeline
from splice.runtime.workspace import Workspace

from tests.helpers.pipeline import make_io, output_rows

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

# One change: (op, the row's key, the row after it; None for a delete). A
# delete marked "no before" is written with before NULL (Postgres' REPLICA
# IDENTITY NOTHING): its key comes from the record key alone.
Change = tuple[str, int, dict[str, Any] | None]
NO_BEFORE = {"customers": {5}}

CUSTOMERS_1: list[Change] = [
    ("r", 1, {"id": 1, "name": "Ann", "region": "north"}),  # the snapshot first
    ("r", 2, {"id": 2, "name": "Bob", "region": "south"}),
    ("r", 3, {"id": 3, "name": "Cid", "region": "east"}),
    ("c", 4, {"id": 4, "name": "Dee", "region": "west"}),
    ("u", 2, {"id": 2, "name": "Bob", "region": "north"}),
    ("d", 3, None),
    ("u", 1, {"id": 1, "name": "Ann B", "region": "north"}),
    ("c", 5, {"id": 5, "name": "Eve", "region": "south"}),
    ("d", 5, None),  # before NULL: the record key says which
]
ACCOUNTS_1: list[Change] = [
    ("r", 1, {"id": 1, "balance": 100}), ("r", 2, {"id": 2, "balance": 200}),
    ("r", 3, {"id": 3, "balance": 300}), ("c", 4, {"id": 4, "balance": 400}),
    ("u", 4, {"id": 4, "balance": 450}),
]
CARTS_1: list[Change] = [
    ("r", 10, {"id": 10, "customer_id": 1, "total": 5}),
    ("c", 11, {"id": 11, "customer_id": 3, "total": 7}),
    ("c", 12, {"id": 12, "customer_id": 2, "total": 9}),
    ("u", 12, {"id": 12, "customer_id": 4, "total": 9}),  # the foreign key moves
]
ORDERS_1 = [{"id": 100, "customer_id": 1, "item": "pen"},
            {"id": 101, "customer_id": 3, "item": "ink"},
            {"id": 102, "customer_id": 5, "item": "cap"}]
# The second run's changes: an update and a delete of customers, a delete of
# an account, a new cart; orders that meet the changed table.
CUSTOMERS_2: list[Change] = [("u", 4, {"id": 4, "name": "Dia", "region": "west"}),
                             ("d", 1, None)]
ACCOUNTS_2: list[Change] = [("d", 2, None)]
CARTS_2: list[Change] = [("c", 13, {"id": 13, "customer_id": 2, "total": 3})]
ORDERS_2 = [{"id": 103, "customer_id": 1, "item": "mug"},
            {"id": 104, "customer_id": 4, "item": "pad"}]

# What the joins give, written out: the two formats must agree with these.
PK_1 = [(1, "Ann B", "north", 100), (2, "Bob", "north", 200), (4, "Dee", "west", 450)]
FK_1 = [(10, 1, "Ann B"), (11, 3, None), (12, 4, "Dee")]
ENRICHED_1 = [(100, "Ann B"), (101, None), (102, None)]
PK_2 = [(4, "Dia", "west", 450)]
FK_2 = [(10, 1, None), (11, 3, None), (12, 4, "Dia"), (13, 2, "Bob")]
ENRICHED_2 = [*ENRICHED_1, (103, None), (104, "Dia")]

PIPELINE = """
CREATE TABLE customers_{f} (id INT PRIMARY KEY, name VARCHAR, region VARCHAR)
  WITH (connector='kafka', topic='{customers}') FORMAT {fmt} ENCODE JSON;
CREATE TABLE accounts_{f} (id INT, balance INT, PRIMARY KEY (id))
  WITH (connector='kafka', topic='{accounts}') FORMAT {fmt} ENCODE JSON;
CREATE TABLE carts_{f} (id INT PRIMARY KEY, customer_id INT, total INT)
  WITH (connector='kafka', topic='{carts}') FORMAT {fmt} ENCODE JSON;
CREATE SOURCE orders_{f} (id INT, customer_id INT, item VARCHAR)
  WITH (connector='kafka', topic='{orders}') FORMAT PLAIN ENCODE JSON;
CREATE TABLE pk_{f} AS SELECT c.id, c.name, c.region, a.balance
  FROM customers_{f} c JOIN accounts_{f} a ON c.id = a.id;
CREATE TABLE fk_{f} AS SELECT k.id, k.customer_id, c.name
  FROM carts_{f} k LEFT JOIN customers_{f} c ON k.customer_id = c.id;
CREATE STREAM enriched_{f} AS SELECT o.id, c.name
  FROM orders_{f} o LEFT JOIN customers_{f} c ON c.id = o.customer_id EMIT CHANGES;
"""


def topic(bootstrap: str, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, name, 2)  # two partitions: a key's changes stay in one
    return name


def kafka_io(spark: Any, warehouse: Any, sql: str, name: str, bootstrap: str) -> StepIO:
    io = make_io(spark, warehouse, sql, name=name)
    return Workspace(io.pipeline, SpliceSettings.from_env(kafka_bootstrap=bootstrap),
                     warehouse=io.warehouse, spark=io.spark).io


def _schema(name: str, fields: dict[str, str]) -> dict[str, Any]:
    """Kafka Connect's schema of a struct, as its JSON converter writes it."""
    return {"type": "struct", "optional": False, "name": name,
            "fields": [{"field": f, "type": t, "optional": f != "id"} for f, t in fields.items()]}


def debezium_records(table: str, changes: list[Change], state: dict[int, dict[str, Any]],
                     wrapped: bool = False) -> list[Record]:
    """``changes`` as Debezium writes them: each an envelope keyed by
    ``{"id": ..}``, a delete followed by a tombstone; ``wrapped``: in Kafka
    Connect's JSON converter with schemas (``{"schema", "payload"}``), key
    and value. ``state``: each key's row so far (the befores), updated."""
    out = []
    for lsn, (op, key, after) in enumerate(changes):
        before = None if op in ("c", "r") or key in NO_BEFORE.get(table, ()) else state.get(key)
        envelope = {"before": before, "after": after, "op": op, "ts_ms": 1_704_067_200_000 + lsn,
                    "source": {"connector": "postgresql", "db": "inventory", "table": table,
                               "lsn": lsn, "snapshot": "true" if op == "r" else "false"},
                    "transaction": None}
        record_key: dict[str, Any] = {"id": key}
        if wrapped:
            row = {f: ("int32" if isinstance(v, int) else "string")
                   for f, v in (after or before or {"id": key}).items()}
            envelope = {"schema": _schema(f"dbserver1.inventory.{table}.Envelope", row),
                        "payload": envelope}
            record_key = {"schema": _schema(f"dbserver1.inventory.{table}.Key", {"id": "int32"}),
                          "payload": record_key}
        out.append(Record(envelope, record_key))
        if op == "d":
            out.append(Record(None, record_key))  # the tombstone Debezium writes after it
            state.pop(key, None)
        else:
            state[key] = after  # type: ignore[assignment]
    return out


def upsert_records(changes: list[Change]) -> list[Record]:
    """The same changes as an upsert topic: the key's text, the row, a null
    value to delete."""
    return [Record(None if op == "d" else after, str(key)) for op, key, after in changes]


def test_debezium_and_upsert_topics_give_the_same_joined_rows(spark, warehouse, kafka) -> None:
    names = {f: {t: topic(kafka, f"{t}-{f}") for t in ("customers", "accounts", "carts")}
             for f in ("dbz", "up")}
    orders = topic(kafka, "orders")
    sql = "".join(PIPELINE.format(f=f, fmt=fmt, orders=orders, **names[f])
                  for f, fmt in (("dbz", "DEBEZIUM"), ("up", "UPSERT")))
    io = kafka_io(spark, warehouse, sql, "dbz_vs_upsert", kafka)
    state: dict[str, dict[int, dict[str, Any]]] = {"customers": {}, "accounts": {}, "carts": {}}

    def produce_changes(batches: dict[str, list[Change]], new_orders: list[dict]) -> None:
        for table, changes in batches.items():
            produce(kafka, names["dbz"][table], debezium_records(
                table, changes, state[table], wrapped=table == "accounts"))
            produce(kafka, names["up"][table], upsert_records(changes))
        produce(kafka, orders, [Record(o, str(o["id"])) for o in new_orders])

    def outputs(f: str) -> tuple[list[tuple], list[tuple], list[tuple]]:
        return (output_rows(io, f"pk_{f}", "id", "name", "region", "balance"),
                output_rows(io, f"fk_{f}", "id", "customer_id", "name"),
                output_rows(io, f"enriched_{f}", "id", "name"))

    produce_changes({"customers": CUSTOMERS_1, "accounts": ACCOUNTS_1, "carts": CARTS_1},
                    ORDERS_1)
    run_pipeline(io.pipeline, io)
    assert outputs("dbz") == outputs("up")
    assert outputs("dbz") == (PK_1, FK_1, sorted(ENRICHED_1, key=repr))
    customers = io.read_table("customers_dbz_table").collect()
    assert sorted((r["_key"], r["name"], r["region"]) for r in customers) == [
        (1, "Ann B", "north"), (2, "Bob", "north"), (4, "Dee", "west")]

    # An update and deletes arriving after the first run: read incrementally.
    produce_changes({"customers": CUSTOMERS_2, "accounts": ACCOUNTS_2, "carts": CARTS_2},
                    ORDERS_2)
    run_pipeline(io.pipeline, io)
    assert outputs("dbz") == outputs("up")
    assert outputs("dbz") == (PK_2, FK_2, sorted(ENRICHED_2, key=repr))

    # A rerun with nothing new changes nothing.
    reports = run_pipeline(io.pipeline, io)
    assert all(r.skipped for r in reports)
    assert outputs("dbz") == (PK_2, FK_2, sorted(ENRICHED_2, key=repr))


def test_envelopes_that_cannot_be_read_go_to_the_dead_letter(spark, warehouse, kafka) -> None:
    """A value that is not an envelope, an unknown op, an update without
    its after row and an after row of a wrong type go to the dead letter
    with where they were; a Debezium tombstone is skipped."""
    customers = f"bad-customers-{uuid.uuid4().hex[:8]}"
    create_topic(kafka, customers, 1)
    sql = (f"CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR) WITH ("
           f"connector='kafka', topic='{customers}') FORMAT DEBEZIUM ENCODE JSON;\n"
           "CREATE TABLE named AS SELECT id, name FROM customers;")
    io = kafka_io(spark, warehouse, sql, "dbz_dead", kafka)
    key = {"id": 1}
    produce(kafka, customers, [
        Record({"before": None, "after": {"id": 1, "name": "Ann"}, "op": "c"}, key),
        Record('{"before": null, "after": ', key),  # 1: not JSON
        Record({"id": 2, "name": "Bob"}, {"id": 2}),  # 2: a plain row, no envelope
        Record({"before": None, "after": None, "op": "t"}, None),  # 3: a truncate
        Record({"before": {"id": 1, "name": "Ann"}, "after": None, "op": "u"}, key),  # 4
        Record({"before": None, "after": {"id": "three", "name": "Cy"}, "op": "c"},
               {"id": "three"}),  # 5: the row's id is not INT
        Record(None, {"id": 9}),  # a tombstone: skipped
        Record({"schema": {"type": "struct"}, "payload": {
            "before": None, "after": {"id": 4, "name": "Dee"}, "op": "r"}}, {"id": 4}),
        Record({"before": None, "after": None, "op": "d"}, None),  # 8: no key anywhere
    ])
    reports = {r.step_id: r for r in run_pipeline(io.pipeline, io)}
    assert output_rows(io, "named", "id", "name") == [(1, "Ann"), (4, "Dee")]
    assert reports["customers"].dead_letters == 6
    dead = spark.read.format("delta").load(warehouse.dead_letter_path("dbz_dead", "customers"))
    envelope = ("not a Debezium change event: no 'op' (a JSON object {\"before\", \"after\", "
                "\"op\", ...} or {\"schema\", \"payload\": {...}} is read)")
    assert sorted((r["topic"], r["partition"], r["offset"], r["reason"])
                  for r in dead.collect()) == [
        (customers, 0, 1, envelope),
        (customers, 0, 2, envelope),
        (customers, 0, 3, "unknown Debezium op 't': c, r, u and d are read"),
        (customers, 0, 4, "Debezium op 'u' without an 'after' row"),
        (customers, 0, 5, "column 'id': 'three' is not INT; key '{\"id\": \"three\"}' is not "
                          "INT (key format JSON); missing key: the record has no key and its "
                          "value no key column"),
        (customers, 0, 8, "missing key: the record has no key and its value no key column"),
    ]
    # the dead letter keeps the record as written, the envelope
    assert {r["record"] for r in dead.collect() if r["offset"] == 3} == {
        '{"before": null, "after": null, "op": "t"}'}

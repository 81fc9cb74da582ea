"""The Splice dialect (sql.dialect) and the script parser (sql.script).

No Spark here: parsing, printing back, node shapes, positions and errors.
"""

from __future__ import annotations

import pytest
from splice.sql import expressions
from splice.sql.dialect import parse_duration
from sqlglot import exp
from sqlglot.errors import ParseError

from tests.sql.dialect_helpers import (
    only_join,
    select,
    statement,
    validate_identity,
)

# ---------------------------------------------------------------------------
# (a) identity: parse, then print with Splice


IDENTITIES: list[tuple[str, str | None]] = [
    # Source DDL
    (
        "CREATE STREAM orders (id INT, customer_id INT, item STRING, ts TIMESTAMP) "
        "WITH (location='orders', format='delta', key='id', timestamp='ts')",
        None,
    ),
    ("CREATE TABLE customers (id INT, name STRING) WITH (location='customers', key='id')", None),
    (
        "CREATE SOURCE s1 (id INT, value INT, ts TIMESTAMP, "
        "WATERMARK FOR ts AS ts - INTERVAL '20' SECOND) WITH (location='s1')",
        None,
    ),
    (
        "CREATE TABLE t (a INT, b INTEGER, c BIGINT, d SMALLINT, e TINYINT, f STRING, "
        "g VARCHAR, h VARCHAR(32), i TEXT, j BOOLEAN, k DOUBLE, l FLOAT, m DECIMAL(10,2), "
        "n DATE, o TIMESTAMP)",
        "CREATE TABLE t (a INT, b INT, c BIGINT, d SMALLINT, e TINYINT, f STRING, "
        "g STRING, h VARCHAR(32), i STRING, j BOOLEAN, k DOUBLE, l FLOAT, m DECIMAL(10, 2), "
        "n DATE, o TIMESTAMP)",
    ),
    ("CREATE TABLE t (id INT NOT NULL PRIMARY KEY, v STRING) WITH (location='t')", None),
    (
        "CREATE STREAM s (value INT, ts TIMESTAMP, timestamp TIMESTAMP, stream STRING, "
        "key STRING, Rowtime_Col TIMESTAMP)",
        None,
    ),
    ("CREATE TABLE t (id INT) WITH (changelog=false, n=5)",
     "CREATE TABLE t (id INT) WITH (changelog='false', n=5)"),
    ("create stream input-topic (a int) with (location='input_topic')",
     "CREATE STREAM input-topic (a INT) WITH (location='input_topic')"),
    ("CREATE STREAM stocks.order_quantity (q INT)", None),
    # Outputs and steps
    ("CREATE STREAM out AS SELECT * FROM a EMIT CHANGES", None),
    ("CREATE TABLE out AS SELECT a.id FROM a", None),
    ("CREATE MATERIALIZED VIEW mv AS SELECT s1.id AS id1 FROM s1", None),
    ("INSERT INTO target-topic SELECT STREAM field1 FROM input-topic", None),
    ("INSERT INTO out SELECT STREAM * FROM a EMIT CHANGES",
     "INSERT INTO out SELECT STREAM * FROM a"),
    ("WITH customersTable AS (SELECT TABLE * FROM customers)", None),
    ("SET join.late.match.retention = '1 HOUR'", None),
    ("SET defaults.topic.autocreate=true", "SET defaults.topic.autocreate = 'true'"),
    ("SET n = 5", None),
    ("SET mode = lenient", "SET mode = 'lenient'"),
    ("SET n = -2", None),
    ("SET 'odd name' = 1", None),
    ("SET 'plain.name' = 1", "SET plain.name = 1"),
    ("EXPLAIN INSERT INTO out SELECT STREAM * FROM a", None),
    ("EXPLAIN CREATE STREAM a (id INT)", None),
    # SELECT STREAM / TABLE
    ("SELECT STREAM * FROM t", None),
    ("SELECT TABLE * FROM t", None),
    ("SELECT stream FROM t", None),
    ("SELECT stream, x FROM t", None),
    ("SELECT STREAM stream FROM t", None),
    ("SELECT TABLE table, stream FROM t", None),
    ("SELECT stream * 2 FROM t", None),
    ("SELECT stream.x FROM stream", None),
    ("SELECT STREAM (1 + field1) AS x FROM t", None),
    # Names
    ("SELECT STREAM _key AS old-key FROM input-topic", None),
    ("SELECT a-b, a - b, a -b FROM t", "SELECT a - b, a - b, a - b FROM t"),
    ("SELECT x FROM input-topic AS in-t", None),
    ("SELECT x FROM stocks.order_quantity", None),
    ('SELECT b1."ticker", `b` FROM bids AS b1', 'SELECT b1."ticker", "b" FROM bids AS b1'),
    ('SELECT x FROM "input-topic"', "SELECT x FROM input-topic"),
    ("SELECT x FROM `input-topic`", "SELECT x FROM input-topic"),
    ('SELECT x AS "two words" FROM t', None),
    # Projections
    ("SELECT STREAM field1 AS x.a, field2 AS x.b FROM t", None),
    ("SELECT STREAM (1 + field1) AS _key.a FROM t", None),
    ("SELECT STREAM field1 AS foo.bar.field1 FROM t", None),
    ("SELECT STREAM field1 AS _key, field2 AS _value FROM t", None),
    ("SELECT STREAM field1 f1, field2 AS f2 FROM t",
     "SELECT STREAM field1 AS f1, field2 AS f2 FROM t"),
    ("SELECT STREAM t.*, _key.field2, _value.field1 FROM t", None),
    # Joins
    ("SELECT * FROM a JOIN b ON a.x = b.x", None),
    ("SELECT * FROM a INNER JOIN b ON a.x = b.x", None),
    ("SELECT * FROM a LEFT JOIN b ON a.x = b.x", None),
    ("SELECT * FROM a LEFT OUTER JOIN b ON a.x = b.x", "SELECT * FROM a LEFT JOIN b ON a.x = b.x"),
    ("SELECT * FROM a RIGHT OUTER JOIN b ON a.x = b.x",
     "SELECT * FROM a RIGHT JOIN b ON a.x = b.x"),
    ("SELECT * FROM a FULL OUTER JOIN b ON a.x = b.x", "SELECT * FROM a FULL JOIN b ON a.x = b.x"),
    ("SELECT * FROM a OUTER JOIN b ON a.x = b.x", "SELECT * FROM a FULL JOIN b ON a.x = b.x"),
    ("SELECT * FROM a CROSS JOIN b", None),
    ("SELECT * FROM a, b WHERE a.x = b.x", "SELECT * FROM a CROSS JOIN b WHERE a.x = b.x"),
    ("SELECT * FROM a NATURAL JOIN b", None),
    ("SELECT * FROM a NATURAL LEFT JOIN b", None),
    ("SELECT * FROM a e JOIN b f USING (x, y)", "SELECT * FROM a AS e JOIN b AS f USING (x, y)"),
    ("SELECT * FROM a JOIN b ON (a.x = b.x AND b.ok)",
     "SELECT * FROM a JOIN b ON a.x = b.x AND b.ok"),
    ("SELECT TABLE * FROM customers JOIN orders", None),
    ("SELECT * FROM a JOIN b ON a.x = b.x JOIN c ON c.x = a.x", None),
    ("SELECT * FROM a ASOF JOIN b ON a.k = b.k AND b.t <= a.t", None),
    ("SELECT * FROM a ASOF LEFT JOIN b ON a.k = b.k AND b.t <= a.t", None),
    # Join windows
    ("SELECT * FROM a JOIN b WITHIN 5s ON a.x = b.x",
     "SELECT * FROM a JOIN b WITHIN 5 SECONDS ON a.x = b.x"),
    ("SELECT * FROM a LEFT JOIN b WITHIN 1h ON a.x = b.x",
     "SELECT * FROM a LEFT JOIN b WITHIN 1 HOUR ON a.x = b.x"),
    ("SELECT * FROM a JOIN b ON a.x = b.x WITHIN 500ms",
     "SELECT * FROM a JOIN b WITHIN 500 MILLISECONDS ON a.x = b.x"),
    ("SELECT * FROM a o JOIN b p WITHIN 1 HOURS ON p.id = o.id",
     "SELECT * FROM a AS o JOIN b AS p WITHIN 1 HOUR ON p.id = o.id"),
    ("SELECT * FROM a JOIN b WITHIN 2 HOURS ON a.x = b.x", None),
    ("SELECT * FROM a JOIN b WITHIN 15 SECONDS GRACE PERIOD 5 SECONDS ON a.x = b.x", None),
    ("SELECT * FROM a JOIN b WITHIN (1 MINUTE, 2 MINUTES) ON a.x = b.x", None),
    ("SELECT * FROM a JOIN b WITHIN INTERVAL '1' MINUTE ON a.x = b.x",
     "SELECT * FROM a JOIN b WITHIN 1 MINUTE ON a.x = b.x"),
    ("SELECT * FROM a JOIN b WITHIN INTERVAL '1 minute' ON a.x = b.x",
     "SELECT * FROM a JOIN b WITHIN 1 MINUTE ON a.x = b.x"),
    ("SELECT * FROM a JOIN b WITHIN 2d ON a.x = b.x",
     "SELECT * FROM a JOIN b WITHIN 2 DAYS ON a.x = b.x"),
    ("SELECT * FROM a JOIN b WITHIN 5s", "SELECT * FROM a JOIN b WITHIN 5 SECONDS"),
    ("SELECT * FROM a JOIN b GRACE PERIOD 1s ON a.x = b.x",
     "SELECT * FROM a JOIN b GRACE PERIOD 1 SECOND ON a.x = b.x"),
    ("SELECT * FROM a JOIN (SELECT STREAM * FROM b) AS c WITHIN 5 SECONDS ON a.x = c.x", None),
    ("SELECT * FROM a JOIN b WITHIN 5s JOIN c WITHIN 6s ON c.x = b.x",
     "SELECT * FROM a JOIN b WITHIN 5 SECONDS JOIN c WITHIN 6 SECONDS ON c.x = b.x"),
    # s-Server windows
    ("SELECT STREAM * FROM s OVER (RANGE INTERVAL '1' MINUTE PRECEDING) AS a", None),
    ("SELECT * FROM s OVER (RANGE CURRENT ROW) AS a", None),
    ("SELECT * FROM s OVER (ROWS 5 PRECEDING) AS a", None),
    ("SELECT * FROM s OVER (ROWS BETWEEN 5 PRECEDING AND CURRENT ROW) AS a",
     "SELECT * FROM s OVER (ROWS 5 PRECEDING) AS a"),
    ("SELECT * FROM s OVER (RANGE BETWEEN INTERVAL '1' MINUTE PRECEDING AND CURRENT ROW) AS a",
     "SELECT * FROM s OVER (RANGE INTERVAL '1' MINUTE PRECEDING) AS a"),
    ("select * from bids over (range interval '1' hour preceding) as b1 "
     "join asks over (range interval '2' second preceding) on b1.t = asks.t",
     "SELECT * FROM bids OVER (RANGE INTERVAL '1' HOUR PRECEDING) AS b1 "
     "JOIN asks OVER (RANGE INTERVAL '2' SECOND PRECEDING) ON b1.t = asks.t"),
    # RisingWave
    ("SELECT * FROM sales JOIN products FOR SYSTEM_TIME AS OF PROCTIME() ON product_id = id", None),
    ("SELECT * FROM sales AS s JOIN products FOR SYSTEM_TIME AS OF PROCTIME() AS p ON s.a = p.a",
     None),
    ("SELECT * FROM sales AS s JOIN products AS p FOR SYSTEM_TIME AS OF PROCTIME() ON s.a = p.a",
     "SELECT * FROM sales AS s JOIN products FOR SYSTEM_TIME AS OF PROCTIME() AS p ON s.a = p.a"),
    ("SELECT * FROM TUMBLE(s1, ts, interval '1' MINUTE) JOIN TUMBLE(s2, ts, interval '1' MINUTE) "
     "ON s1.id = s2.id AND s1.window_start = s2.window_start",
     "SELECT * FROM TUMBLE(s1, ts, INTERVAL '1' MINUTE) JOIN TUMBLE(s2, ts, INTERVAL '1' MINUTE) "
     "ON s1.id = s2.id AND s1.window_start = s2.window_start"),
    ("SELECT * FROM HOP(s, ts, INTERVAL '1' MINUTE, INTERVAL '5' MINUTE) AS w", None),
    ("SELECT * FROM s1 JOIN s2 ON s1.id = s2.id AND s1.ts BETWEEN s2.ts AND "
     "s2.ts + INTERVAL '1 minute'",
     "SELECT * FROM s1 JOIN s2 ON s1.id = s2.id AND s1.ts BETWEEN s2.ts AND "
     "s2.ts + INTERVAL '1' MINUTE"),
    # Expressions
    ("SELECT CONCAT('a', 'b'), LENGTH(x), LEN(x), SUBSTR(x, 5), UPPER(x), LOWER(x), "
     "COALESCE(x, y), CAST(x AS STRING) FROM t",
     "SELECT CONCAT('a', 'b'), LENGTH(x), LENGTH(x), SUBSTRING(x, 5), UPPER(x), LOWER(x), "
     "COALESCE(x, y), CAST(x AS STRING) FROM t"),
    ("SELECT 5 + 7, a * (b - 1) / 2, a % 3 FROM t", None),
    ("SELECT CASE WHEN field3 = 'Robert' THEN 'It''s bobby' ELSE 'Unknown' END AS who FROM t",
     None),
    ("SELECT 'It\\'s' FROM t", "SELECT 'It''s' FROM t"),
    ("SELECT TABLE name, COUNT(*) AS total, SUM(x), MIN(x), MAX(x), AVG(x) FROM t "
     "WHERE a > 1 AND NOT b OR c <> 2 GROUP BY name", None),
    ("SELECT STREAM rowtime, ROWTIME FROM t WHERE x BETWEEN 1 AND 2", None),
]


@pytest.mark.parametrize(("sql", "canonical"), IDENTITIES)
def test_identity(sql: str, canonical: str | None) -> None:
    validate_identity(sql, canonical)


def test_spark_sql_of_standard_nodes_stays_valid() -> None:
    query = select(
        "SELECT STREAM _key AS old-key, 'It''s' AS s FROM input-topic AS t JOIN u WITHIN 5s "
        "ON t.x = u.x AND t.ts BETWEEN u.ts AND u.ts + INTERVAL '1 minute'"
    )
    assert query.expressions[0].sql(dialect="spark") == "_key AS `old-key`"
    assert query.expressions[1].sql(dialect="spark") == "'It\\'s' AS s"
    on = query.args["joins"][0].args["on"]
    assert on.sql(dialect="spark") == (
        "t.x = u.x AND t.ts BETWEEN u.ts AND u.ts + INTERVAL '1' MINUTE"
    )
    assert query.sql(dialect="spark") == (
        "SELECT _key AS `old-key`, 'It\\'s' AS s FROM `input-topic` AS t JOIN u "
        "ON t.x = u.x AND t.ts BETWEEN u.ts AND u.ts + INTERVAL '1' MINUTE"
    )


# ---------------------------------------------------------------------------
# (b) the node shapes of the contract (sql/expressions.py)


def test_create_source_shape() -> None:
    node = statement(
        "CREATE SOURCE s1 (id INT NOT NULL, value INT, ts TIMESTAMP, "
        "WATERMARK FOR ts AS ts - INTERVAL '20' SECOND) WITH (location='s1', key='id', n=3)"
    )
    assert isinstance(node, expressions.CreateSource)
    assert node.args["kind"] == "SOURCE"
    assert node.this == exp.to_identifier("s1")
    assert [c.name for c in node.expressions] == ["id", "value", "ts"]
    assert all(isinstance(c, exp.ColumnDef) for c in node.expressions)
    assert node.expressions[0].args["kind"].sql(dialect="spark") == "INT"
    assert node.expressions[0].args["constraints"]
    watermark = node.args["watermark"]
    assert isinstance(watermark, expressions.Watermark) and watermark.this.name == "ts"
    assert isinstance(watermark.expression, exp.Sub)
    assert isinstance(watermark.expression.expression, exp.Interval)
    options = node.args["options"]
    assert all(isinstance(o, exp.Property) for o in options)
    assert [(o.name, o.args["value"]) for o in options] == [
        ("location", exp.Literal.string("s1")),
        ("key", exp.Literal.string("id")),
        ("n", exp.Literal.number(3)),
    ]


def test_source_names_keep_hyphens_and_dots_whole() -> None:
    assert statement("CREATE STREAM input-topic (a INT)").this.name == "input-topic"
    assert statement("CREATE STREAM stocks.order_quantity (a INT)").this.name == (
        "stocks.order_quantity"
    )
    table = select("SELECT * FROM stocks.order_quantity").args["from_"].this
    assert expressions.table_name(table) == "stocks.order_quantity"
    table = select("SELECT * FROM input-topic").args["from_"].this
    assert expressions.table_name(table) == "input-topic"


@pytest.mark.parametrize(
    ("sql", "kind", "emit"),
    [
        ("CREATE STREAM o AS SELECT * FROM a EMIT CHANGES", "STREAM", True),
        ("CREATE TABLE o AS SELECT * FROM a", "TABLE", False),
        ("CREATE MATERIALIZED VIEW o AS SELECT * FROM a", "MATERIALIZED VIEW", False),
    ],
)
def test_create_as_shape(sql: str, kind: str, emit: bool) -> None:
    node = statement(sql)
    assert isinstance(node, expressions.CreateAs)
    assert node.args["kind"] == kind
    assert node.this.name == "o"
    assert isinstance(node.expression, exp.Select)
    assert node.args["emit_changes"] is emit


def test_insert_with_set_explain_shapes() -> None:
    insert = statement("INSERT INTO target-topic SELECT STREAM * FROM a")
    assert isinstance(insert, expressions.InsertInto) and insert.this.name == "target-topic"
    assert insert.expression.args["result_kind"] == "STREAM"

    step = statement("WITH joined AS (SELECT TABLE * FROM a)")
    assert isinstance(step, expressions.WithStep) and step.this.name == "joined"
    assert step.expression.args["result_kind"] == "TABLE"

    setting = statement("SET join.late.match.retention = '1 HOUR'")
    assert isinstance(setting, expressions.SetOption)
    assert setting.name == "join.late.match.retention"
    assert setting.expression == exp.Literal.string("1 HOUR")
    assert statement("SET a.b = TRUE").expression == exp.Literal.string("true")
    assert statement("SET a.b = 10").expression == exp.Literal.number(10)
    assert statement("SET a.b = word").expression == exp.Literal.string("word")

    explain = statement("EXPLAIN WITH s AS (SELECT STREAM * FROM a)")
    assert isinstance(explain, expressions.Explain)
    assert isinstance(explain.this, expressions.WithStep)


@pytest.mark.parametrize(
    ("sql", "kind", "columns"),
    [
        ("SELECT STREAM * FROM t", "STREAM", ["*"]),
        ("SELECT TABLE a, b FROM t", "TABLE", ["a", "b"]),
        ("SELECT a FROM t", None, ["a"]),
        ("SELECT stream FROM t", None, ["stream"]),
        ("SELECT stream, x FROM t", None, ["stream", "x"]),
        ("SELECT STREAM stream FROM t", "STREAM", ["stream"]),
        ("SELECT table FROM t", None, ["table"]),
        ("SELECT STREAM (SELECT 1) AS one FROM t", "STREAM", ["one"]),
    ],
)
def test_result_kind(sql: str, kind: str | None, columns: list[str]) -> None:
    query = select(sql)
    assert query.args.get("result_kind") == kind
    assert [e.alias_or_name for e in query.expressions] == columns


def test_result_kind_of_a_nested_select_stays_its_own() -> None:
    query = select("SELECT STREAM x FROM (SELECT TABLE * FROM t) AS s")
    assert query.args["result_kind"] == "STREAM"
    assert query.find(exp.Subquery).this.args["result_kind"] == "TABLE"


def test_path_alias_and_facet_aliases() -> None:
    query = select(
        "SELECT STREAM f1 AS x.a, (1 + f2) AS _key.a, f3 AS foo.bar.field1, f4 AS _key, "
        "f5 AS _value, _key AS old-key, _key.field2, _value.field1 AS f, g h FROM t"
    )
    first, second, third, key, value, old, key_field, value_field, implicit = query.expressions
    assert isinstance(first, expressions.PathAlias) and first.parts == ["x", "a"]
    assert first.this == exp.column("f1")
    assert isinstance(second, expressions.PathAlias) and second.parts == ["_key", "a"]
    assert isinstance(second.this, exp.Paren)
    assert isinstance(third, expressions.PathAlias) and third.parts == ["foo", "bar", "field1"]
    assert isinstance(key, exp.Alias) and key.alias == "_key"
    assert isinstance(value, exp.Alias) and value.alias == "_value"
    assert isinstance(old, exp.Alias) and old.alias == "old-key"
    assert key_field == exp.column("field2", table="_key")
    assert isinstance(value_field, exp.Alias) and value_field.this == exp.column(
        "field1", table="_value"
    )
    assert isinstance(implicit, exp.Alias) and implicit.alias == "h"


def test_hyphen_is_a_name_only_where_a_name_stands() -> None:
    query = select("SELECT a-b, a - b AS c-d FROM in-topic x-y")
    assert isinstance(query.expressions[0], exp.Sub)
    assert query.expressions[1].alias == "c-d" and isinstance(query.expressions[1].this, exp.Sub)
    table = query.args["from_"].this
    assert table.name == "in-topic" and table.alias == "x-y"


def test_join_shapes() -> None:
    assert only_join("SELECT * FROM a JOIN b ON a.x = b.x").kind in (None, "")
    left = only_join("SELECT * FROM a LEFT OUTER JOIN b ON a.x = b.x")
    assert left.side == "LEFT" and not left.kind
    outer = only_join("SELECT * FROM a OUTER JOIN b ON a.x = b.x")
    assert outer.side == "FULL" and not outer.kind
    full = only_join("SELECT * FROM a FULL OUTER JOIN b ON a.x = b.x")
    assert full.side == "FULL" and not full.kind
    assert only_join("SELECT * FROM a INNER JOIN b ON a.x = b.x").kind == "INNER"
    assert only_join("SELECT * FROM a CROSS JOIN b").kind == "CROSS"
    comma = only_join("SELECT * FROM a, b WHERE a.x = b.x")
    assert comma.kind == "CROSS" and not comma.args.get("on")
    assert only_join("SELECT * FROM a NATURAL JOIN b").method == "NATURAL"
    asof = only_join("SELECT * FROM a ASOF LEFT JOIN b ON a.k = b.k AND b.t <= a.t")
    assert asof.method == "ASOF" and asof.side == "LEFT"
    using = only_join("SELECT * FROM a JOIN b USING (x, y)")
    assert [i.name for i in using.args["using"]] == ["x", "y"]
    bare = only_join("SELECT * FROM customers JOIN orders")
    assert not bare.args.get("on") and not bare.args.get("using")
    wrapped = only_join("SELECT * FROM a JOIN b ON (a.x = b.x)")
    assert isinstance(wrapped.args["on"], exp.EQ)


def test_multi_way_join_chain() -> None:
    query = select(
        "SELECT * FROM orders o INNER JOIN payments p WITHIN 1 HOURS ON p.id = o.id "
        "INNER JOIN shipments s WITHIN 2 HOURS ON s.id = o.id"
    )
    first, second = query.args["joins"]
    assert first.this.alias == "p" and second.this.alias == "s"
    assert first.args["within"].this.millis == 3_600_000
    assert second.args["within"].this.millis == 7_200_000


@pytest.mark.parametrize(
    ("clause", "before", "after", "grace"),
    [
        ("JOIN b WITHIN 5s ON a.x = b.x", 5_000, None, None),
        ("JOIN b ON a.x = b.x WITHIN 5s", 5_000, None, None),
        ("JOIN b WITHIN 1h ON a.x = b.x", 3_600_000, None, None),
        ("JOIN b WITHIN 5 SECONDS ON a.x = b.x", 5_000, None, None),
        ("JOIN b WITHIN 1 HOUR ON a.x = b.x", 3_600_000, None, None),
        ("JOIN b WITHIN 2 HOURS ON a.x = b.x", 7_200_000, None, None),
        ("JOIN b WITHIN 500ms ON a.x = b.x", 500, None, None),
        ("JOIN b r WITHIN 15 SECONDS GRACE PERIOD 5 SECONDS ON a.x = r.x", 15_000, None, 5_000),
        ("JOIN b WITHIN (1 MINUTE, 2 MINUTES) ON a.x = b.x", 60_000, 120_000, None),
        ("JOIN b ON a.x = b.x WITHIN 5s GRACE PERIOD 1s", 5_000, None, 1_000),
        ("JOIN b USING (x) WITHIN 5s", 5_000, None, None),
    ],
)
def test_join_windows(clause: str, before: int, after: int | None, grace: int | None) -> None:
    join = only_join(f"SELECT * FROM a {clause}")
    within = join.args["within"]
    assert isinstance(within, expressions.Within)
    assert isinstance(within.this, expressions.Duration) and within.this.millis == before
    assert (within.expression.millis if within.expression else None) == after
    assert (join.args["grace"].millis if join.args.get("grace") else None) == grace
    assert join.this.name == "b"
    assert join.args.get("on") or join.args.get("using")


@pytest.mark.parametrize(
    ("text", "amount", "unit", "millis"),
    [
        ("5s", "5", "SECOND", 5_000),
        ("1h", "1", "HOUR", 3_600_000),
        ("500ms", "500", "MILLISECOND", 500),
        ("5 SECONDS", "5", "SECOND", 5_000),
        ("1 HOUR", "1", "HOUR", 3_600_000),
        ("2 hours", "2", "HOUR", 7_200_000),
        ("3m", "3", "MINUTE", 180_000),
        ("1 day", "1", "DAY", 86_400_000),
        ("INTERVAL '1' MINUTE", "1", "MINUTE", 60_000),
        ("INTERVAL '1 minute'", "1", "MINUTE", 60_000),
        ("INTERVAL '20' SECOND", "20", "SECOND", 20_000),
        ("INTERVAL '1.5' MINUTES", "1.5", "MINUTE", 90_000),
    ],
)
def test_durations(text: str, amount: str, unit: str, millis: int) -> None:
    duration = parse_duration(text)
    assert isinstance(duration, expressions.Duration)
    assert duration.this == exp.Literal.number(amount)
    assert duration.args["unit"] == unit
    assert duration.millis == millis


@pytest.mark.parametrize("text", ["5", "5 WEEKS", "INTERVAL '1' MONTH", "x", "5s 6s", "-5s",
                                  "INTERVAL '-1' SECOND", "1.0001s"])
def test_not_durations(text: str) -> None:
    with pytest.raises(ParseError):
        parse_duration(text)


@pytest.mark.parametrize(
    ("window", "kind", "width"),
    [
        ("OVER (RANGE INTERVAL '1' MINUTE PRECEDING)", "RANGE", 60_000),
        ("over (range interval '1' hour preceding)", "RANGE", 3_600_000),
        ("OVER (RANGE BETWEEN INTERVAL '1' MINUTE PRECEDING AND CURRENT ROW)", "RANGE", 60_000),
        ("OVER (RANGE CURRENT ROW)", "RANGE", None),
        ("OVER (ROWS 5 PRECEDING)", "ROWS", 5),
        ("OVER (ROWS BETWEEN 5 PRECEDING AND CURRENT ROW)", "ROWS", 5),
    ],
)
def test_stream_windows(window: str, kind: str, width: int | None) -> None:
    query = select(f"SELECT * FROM s {window} AS a JOIN t {window} ON a.x = t.x")
    for table in (query.args["from_"].this, query.args["joins"][0].this):
        assert isinstance(table, exp.Table)
        stream_window = table.args["stream_window"]
        assert isinstance(stream_window, expressions.StreamWindow)
        assert stream_window.args["kind"] == kind
        if width is None:
            assert stream_window.this is None
        elif kind == "RANGE":
            assert stream_window.this.millis == width
        else:
            assert stream_window.this == exp.Literal.number(width)
    assert query.args["from_"].this.alias == "a"
    assert query.args["joins"][0].this.name == "t" and not query.args["joins"][0].this.alias


def test_proctime_table() -> None:
    for sql in (
        "SELECT * FROM sales JOIN products FOR SYSTEM_TIME AS OF PROCTIME() ON product_id = id",
        "SELECT * FROM sales JOIN products FOR SYSTEM_TIME AS OF PROCTIME() AS p ON a = p.b",
        "SELECT * FROM sales JOIN products AS p FOR SYSTEM_TIME AS OF PROCTIME() ON a = p.b",
    ):
        table = only_join(sql).this
        assert table.args.get("proctime") is True
        assert not table.args.get("version")
        assert table.name == "products"


def test_window_tables() -> None:
    query = select(
        "SELECT * FROM TUMBLE(s1, ts, interval '1' MINUTE) JOIN HOP(s2, ts, 1m, 5m) AS h "
        "ON s1.id = h.id AND s1.window_start = h.window_start"
    )
    tumble = query.args["from_"].this
    assert isinstance(tumble, expressions.WindowTable) and tumble.args["kind"] == "TUMBLE"
    assert isinstance(tumble.this, exp.Table) and tumble.this.name == "s1"
    assert isinstance(tumble.args["column"], exp.Column) and tumble.args["column"].name == "ts"
    assert tumble.args["size"].millis == 60_000 and not tumble.args.get("slide")
    hop = query.args["joins"][0].this
    assert isinstance(hop, expressions.WindowTable) and hop.args["kind"] == "HOP"
    assert hop.args["slide"].millis == 60_000 and hop.args["size"].millis == 300_000
    assert hop.alias == "h"
    assert query.find(exp.EQ).this == exp.column("id", table="s1")


def test_expressions_stay_standard() -> None:
    query = select(
        "SELECT STREAM CONCAT('a', 'b'), 'It''s bobby', COUNT(*), rowtime FROM t "
        "WHERE s1.ts BETWEEN s2.ts AND s2.ts + INTERVAL '1 minute' GROUP BY x"
    )
    concat, string, count, rowtime = query.expressions
    assert isinstance(concat, exp.Concat)
    assert string == exp.Literal.string("It's bobby")
    assert isinstance(count, exp.Count)
    assert rowtime == exp.column("rowtime")
    assert isinstance(query.args["where"].this, exp.Between)
    assert query.find(exp.Interval) is not None
    assert query.find(expressions.Duration) is None



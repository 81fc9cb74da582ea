"""A duration longer than Spark can hold is refused at compile time, with
its position and the limit (sql/limits.py, issue 56), in every spelling:
WITHIN, GRACE PERIOD, OVER (RANGE ...), TUMBLE and HOP sizes, INTERVAL
literals in ON, WHERE and SELECT, a watermark, a setting. No Spark here but
the one test that runs a join at the limit (marked ``spark``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from splice.runtime.compile import compile_text
from splice.sql.errors import SqlErrors
from splice.sql.limits import MAX_DURATION_DAYS, MAX_DURATION_MS

from tests.sql.helpers import STREAMS, analyze, join_of, line_col, only_error

LIMIT = (f"at most {MAX_DURATION_DAYS} days (about 284,000 years: Spark computes event times "
         "in 64-bit microseconds, and a time up to 9999-12-31 plus the duration must fit)")
FIX = f"use a duration of at most {MAX_DURATION_DAYS} DAYS"
HUGE = "99999999999999999999"
JOIN = "INSERT INTO out SELECT STREAM a.x, b.y FROM a JOIN b {window} ON a.id = b.id{more};\n"


def test_the_limit_is_what_fits_a_long_of_microseconds_after_the_latest_timestamp() -> None:
    latest = 253_402_300_799_999_999  # 9999-12-31 23:59:59.999999 in µs
    assert MAX_DURATION_DAYS == 103_819_094
    assert latest + MAX_DURATION_MS * 1000 <= 2**63 - 1
    assert latest + (MAX_DURATION_MS + 86_400_000) * 1000 > 2**63 - 1


# (the statements after STREAMS, the text the error points at, how it is written)
REFUSED = [
    (JOIN.format(window=f"WITHIN {HUGE} DAYS", more=""), HUGE, f"{HUGE} DAYS"),
    (JOIN.format(window=f"WITHIN 5s GRACE PERIOD {HUGE} SECONDS", more=""), HUGE,
     f"{HUGE} SECONDS"),
    (JOIN.format(window=f"WITHIN (1 MINUTE, {MAX_DURATION_DAYS + 1} DAYS)", more=""),
     f"{MAX_DURATION_DAYS + 1}", f"{MAX_DURATION_DAYS + 1} DAYS"),
    # Lenses' compact spelling
    (JOIN.format(window="WITHIN 9999999999999h", more=""), "9999999999999h",
     "9999999999999 h"),
    # SQLstream s-Server's OVER (RANGE ...)
    ("INSERT INTO out SELECT STREAM l.x FROM a OVER (RANGE INTERVAL '200000000' DAY "
     "PRECEDING) AS l JOIN b AS r ON l.id = r.id;\n", "INTERVAL '200000000'",
     "200000000 DAY"),
    # RisingWave's TUMBLE and HOP
    ("CREATE MATERIALIZED VIEW out AS SELECT t.x FROM TUMBLE(a, ts, INTERVAL '200000000' "
     "DAY) AS t;\n", "INTERVAL '200000000'", "200000000 DAY"),
    ("CREATE MATERIALIZED VIEW out AS SELECT t.x FROM HOP(a, ts, 1m, 9999999999999999ms) "
     "AS t;\n", "9999999999999999ms", "9999999999999999 ms"),
]


@pytest.mark.parametrize(("statements", "at", "written"), REFUSED,
                         ids=["within", "grace", "within-after", "lenses", "over", "tumble",
                              "hop"])
def test_a_clause_duration_too_long_is_refused_where_it_is_written(
        statements: str, at: str, written: str) -> None:
    sql = STREAMS + statements
    error = only_error(sql)
    assert error.render() == (f"t.sql:{':'.join(map(str, line_col(sql, at)))}: the duration "
                              f"{written} is longer than Spark can hold: {LIMIT}; {FIX}")


INTERVALS = [
    # RisingWave's interval join: a time bound in ON
    JOIN.format(window="", more=f" AND a.ts BETWEEN b.ts - INTERVAL '{HUGE}' DAY AND b.ts"),
    # a residual comparison in ON, of any dialect
    JOIN.format(window="WITHIN 5s", more=f" AND a.ts < b.ts + INTERVAL '{HUGE}' HOUR"),
    # WHERE and SELECT
    f"INSERT INTO out SELECT STREAM a.x FROM a WHERE a.ts > a.ts - INTERVAL '{HUGE}' MINUTE;\n",
    f"CREATE STREAM out AS SELECT a.ts + INTERVAL {HUGE} SECONDS AS t FROM a EMIT CHANGES;\n",
]


@pytest.mark.parametrize("statements", INTERVALS, ids=["between", "residual", "where",
                                                        "select"])
def test_an_interval_literal_too_long_is_refused_where_it_is_written(statements: str) -> None:
    sql = STREAMS + statements
    error = only_error(sql)
    amount = f"'{HUGE}'" if f"'{HUGE}'" in sql else HUGE  # the error points at the amount
    assert (error.position.line, error.position.col) == line_col(sql, amount)
    assert error.rule.startswith("the duration INTERVAL ")
    assert error.rule.endswith(f" is longer than Spark can hold: {LIMIT}")
    assert error.fix == FIX


def test_a_watermark_and_a_setting_too_long_are_refused() -> None:
    sql = ("CREATE SOURCE a (id INT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL "
           f"'{HUGE}' SECOND) WITH (location='a');\n")
    error = only_error(sql)
    assert (error.position.line, error.position.col) == line_col(sql, f"'{HUGE}'")
    assert error.rule == f"the duration INTERVAL '{HUGE}' SECOND is longer than Spark can " \
                         f"hold: {LIMIT}"
    for name in ("join.grace.period", "join.late.match.retention"):
        sql = STREAMS + f"SET {name} = '{HUGE} DAYS';\n"
        error = only_error(sql)
        assert error.render() == (f"t.sql:3:{len(f'SET {name} = ') + 1}: setting '{name}': "
                                  f"the duration '{HUGE} DAYS' is longer than Spark can hold: "
                                  f"{LIMIT}; {FIX}")


def test_a_window_and_grace_that_add_up_past_the_limit_are_refused() -> None:
    half = MAX_DURATION_DAYS // 2
    sql = STREAMS + JOIN.format(window=f"WITHIN {half} DAYS", more="")
    window = join_of(analyze(sql)).window
    assert window.before_ms + window.after_ms == MAX_DURATION_MS
    sql = STREAMS + JOIN.format(window=f"WITHIN {half} DAYS GRACE PERIOD 1 MILLISECOND",
                                more="")
    error = only_error(sql)
    assert error.render() == (
        f"t.sql:{':'.join(map(str, line_col(sql, str(half))))}: this join's window and grace "
        f"add up to {MAX_DURATION_MS + 1} ms, longer than Spark can hold: {LIMIT}; shorten "
        f"the window or the grace period so that together they last at most "
        f"{MAX_DURATION_DAYS} days")


def test_durations_at_the_limit_compile() -> None:
    sql = STREAMS + (
        f"INSERT INTO w SELECT STREAM a.x FROM a WHERE a.ts > a.ts - INTERVAL "
        f"'{MAX_DURATION_DAYS}' DAY;\n"
        f"SET join.grace.period = '{MAX_DURATION_DAYS // 4} DAYS';\n"
        + JOIN.format(window=f"WITHIN {MAX_DURATION_DAYS // 4} DAYS", more=""))
    plan = compile_text(sql, "t.sql", "t")
    assert {"w", "out"} <= {s.id for s in plan.steps}
    assert join_of(plan).window.before_ms == MAX_DURATION_DAYS // 4 * 86_400_000


def test_the_compile_function_raises_the_positioned_errors() -> None:
    sql = STREAMS + JOIN.format(window=f"WITHIN {HUGE} DAYS", more="") + \
        f"INSERT INTO w SELECT STREAM a.x FROM a WHERE a.ts > a.ts - INTERVAL '{HUGE}' DAY;\n"
    with pytest.raises(SqlErrors) as raised:
        compile_text(sql, "t.sql", "t")
    assert [(e.position.line, e.position.col, e.rule.split(" is longer")[0])
            for e in raised.value.errors] == [
        (*line_col(sql, HUGE), f"the duration {HUGE} DAYS"),
        (*line_col(sql, f"'{HUGE}'"), f"the duration INTERVAL '{HUGE}' DAY"),
    ]


def test_splice_validate_prints_the_error_and_fails(tmp_path: Path) -> None:
    """The issue's case, through the command: ksqlDB's WITHIN of 10**20 days
    passed validation and then failed inside Spark."""
    sql = STREAMS + ("CREATE STREAM out AS SELECT a.x, b.y FROM a INNER JOIN b "
                     f"WITHIN {HUGE} DAYS ON a.id = b.id EMIT CHANGES;\n")
    (tmp_path / "p.sql").write_text(sql)
    done = subprocess.run([sys.executable, "-m", "splice.cli", "validate", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    line, col = line_col(sql, HUGE)
    assert (done.returncode, done.stdout, done.stderr) == (
        1, f"{tmp_path / 'p.sql'}:{line}:{col}: the duration {HUGE} DAYS is longer than Spark "
           f"can hold: {LIMIT}; {FIX}\n", "")


LIMIT_CASE = f"""\
case: duration-limit
from: issue 56, the longest window Spark holds, over records of 9999-12-31
sql: |
  CREATE STREAM l (k STRING, v STRING, ts TIMESTAMP) WITH (location='l', key='k', timestamp='ts');
  CREATE STREAM r (k STRING, v STRING, ts TIMESTAMP) WITH (location='r', key='k', timestamp='ts');
  CREATE STREAM j AS SELECT l.v AS lv, r.v AS rv FROM l LEFT JOIN r
    WITHIN ({MAX_DURATION_DAYS // 2} DAYS, {MAX_DURATION_DAYS - MAX_DURATION_DAYS // 2} DAYS)
    GRACE PERIOD 0 SECONDS ON l.k = r.k EMIT CHANGES;
runs:
- append:
    l:
    - {{k: k1, v: A, ts: '9999-12-31 23:59:59'}}
    - {{k: k2, v: B, ts: '2024-01-01 00:00:00'}}
    - {{k: k3, v: C, ts: '0001-01-01 00:00:00'}}
    r:
    - {{k: k1, v: a, ts: '2024-01-01 00:00:00'}}
    - {{k: k2, v: b, ts: '9999-12-31 23:59:59'}}
expect:
  j:
    rows:
    - {{lv: A, rv: a}}
    - {{lv: B, rv: b}}
"""


@pytest.mark.spark
def test_a_join_at_the_limit_runs_over_the_latest_timestamps(spark, tmp_path: Path) -> None:
    """What the engine accepts, end to end: a window and grace of the whole
    limit, records of 9999-12-31 and of 2024 matched across it (C, of year
    1, waits: its window has not closed)."""
    from splice.testing.cases import load_case, run_case

    path = tmp_path / "limit.yaml"
    path.write_text(LIMIT_CASE)
    result = run_case(load_case(path), str(path), spark, workdir=str(tmp_path / "warehouse"))
    assert result.passed, result.render()

"""A stream-stream join across runs: a run that stops part way and the runs
after it give the rows of one uninterrupted run; the join's state stays as
large as its window, however much data goes through; EXPLAIN says what a
CROSS join costs."""

from __future__ import annotations

import pytest
import splice.runtime.step_run
from splice.engine.io import StepIO
from splice.physical.explain import explain_pipeline
from splice.resources.warehouse import WarehouseResource
from splice.runtime.compile import compile_text
from splice.runtime.runner import StepFailed
from splice.sql.errors import SqlErrors

from tests.helpers.intervals import SOURCES, Form, expected, pairs, rec, run
from tests.helpers.pipeline import append, make_io

FULL = SOURCES + """
CREATE STREAM full_join AS SELECT l.v AS lv, r.v AS rv
  FROM lefts l FULL JOIN rights r WITHIN (5 SECONDS, 10 SECONDS) GRACE PERIOD 2 SECONDS
  ON l.k = r.k;
"""
FORM = Form("WITHIN (5 s, 10 s) GRACE 2 s", SOURCES, before=5, after=10, grace=2)


def _chunk(index: int) -> tuple[list, list]:
    """Eight records a side, in time order, 40 s per chunk."""
    base = 40 * index
    lefts = [(f"k{i % 3}", f"L{index}.{i}", base + 4.5 * i) for i in range(8)]
    rights = [(f"k{i % 4}", f"R{index}.{i}", base + 4.5 * i + 2.25) for i in range(8)]
    return lefts, rights


def _append(io: StepIO, chunk: tuple[list, list]) -> None:
    append(io, "lefts", [rec(*r) for r in chunk[0]])
    append(io, "rights", [rec(*r) for r in chunk[1]])


class Crash:
    """Makes the n-th append of the step's micro-batches fail, as a crash at
    that point would."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, at_call: int) -> None:
        self.calls = 0
        real = splice.runtime.step_run.append

        def append_or_crash(*args: object) -> None:
            self.calls += 1
            if self.calls == at_call:
                raise RuntimeError("crash")
            real(*args)

        monkeypatch.setattr(splice.runtime.step_run, "append", append_or_crash)


@pytest.mark.spark
def test_interrupted_runs_give_the_rows_of_one_run(spark, tmp_path, monkeypatch) -> None:
    chunks = [_chunk(i) for i in range(3)]

    one = make_io(spark, WarehouseResource(root=str(tmp_path / "one")), FULL, name="restart")
    for chunk in chunks:
        _append(one, chunk)
    run(one)
    run(one)

    split = make_io(spark, WarehouseResource(root=str(tmp_path / "split")), FULL,
                    name="restart")
    _append(split, chunks[0])
    run(split)
    _append(split, chunks[1])
    with monkeypatch.context() as patch:
        Crash(patch, at_call=1)  # in the micro-batch of the new rows, before writing
        with pytest.raises(StepFailed):
            run(split)
    with monkeypatch.context() as patch:
        Crash(patch, at_call=2)  # the rows are written, then the run stops before the
        with pytest.raises(StepFailed):  # batch that closes windows
            run(split)
    run(split)
    _append(split, chunks[2])
    run(split)
    run(split)

    lefts = [r for chunk in chunks for r in chunk[0]]
    rights = [r for chunk in chunks for r in chunk[1]]
    want = expected(FORM, "FULL", lefts, rights, stream_time=max(r[2] for r in rights))
    assert any(lv and rv for lv, rv in want) and any(lv is None for lv, _ in want)
    assert any(rv is None for _, rv in want)
    assert pairs(one, "full_join") == want
    assert pairs(split, "full_join") == want


def _steady(io: StepIO, runs: int, per_run: int) -> list[int]:
    """One record a second on each side, ten keys; each left record meets the
    right record of its second. The join's state rows after each run."""
    state = []
    for n in range(runs):
        seconds = range(n * per_run, (n + 1) * per_run)
        append(io, "lefts", [rec(f"k{s % 10}", f"l{s}", s) for s in seconds])
        append(io, "rights", [rec(f"k{s % 10}", f"r{s}", s + 0.5) for s in seconds])
        rows = run(io)["left_join"].state_rows
        assert rows is not None
        state.append(rows)
    return state


@pytest.mark.spark
def test_state_stays_as_large_as_the_window(spark, tmp_path) -> None:
    sql = SOURCES + """
    CREATE STREAM left_join AS SELECT l.v AS lv, r.v AS rv
      FROM lefts l LEFT JOIN rights r WITHIN 5 SECONDS GRACE PERIOD 1 SECOND ON l.k = r.k;
    """
    small = make_io(spark, WarehouseResource(root=str(tmp_path / "x1")), sql, name="state")
    large = make_io(spark, WarehouseResource(root=str(tmp_path / "x10")), sql, name="state")
    state_1x = _steady(small, runs=3, per_run=40)
    state_10x = _steady(large, runs=3, per_run=400)

    # Ten times the data, the same state: what the window holds, a few
    # seconds' worth of records, not what went through.
    assert max(state_10x) <= max(state_1x) + 4
    assert max(state_10x) < 0.02 * 2 * 3 * 400
    assert pairs(large, "left_join") == sorted(
        ((f"l{s}", f"r{s}") for s in range(1200)), key=repr)


def test_a_cross_join_says_what_it_costs() -> None:
    pipeline = compile_text(SOURCES + """
    CREATE STREAM crossed AS SELECT l.v AS lv, r.v AS rv
      FROM lefts l CROSS JOIN rights r WITHIN 1 MINUTE;
    """, file="cross.sql", name="cross")
    text = explain_pipeline(pipeline)
    assert "IntervalJoin" in text
    assert "constant key" in text and "one partition" in text


def test_a_cross_join_of_streams_needs_a_window() -> None:
    with pytest.raises(SqlErrors) as err:
        compile_text(SOURCES + "CREATE STREAM crossed AS SELECT l.v AS lv, r.v AS rv "
                     "FROM lefts l CROSS JOIN rights r;", file="cross.sql", name="cross")
    assert "needs a window" in str(err.value.errors[0].render())


@pytest.mark.spark
def test_a_stream_joined_with_itself(spark, warehouse) -> None:
    io = make_io(spark, warehouse, SOURCES + """
    CREATE STREAM pairs AS SELECT a.v AS lv, b.v AS rv
      FROM lefts a JOIN lefts b WITHIN 5 SECONDS ON a.k = b.k;
    """, name="self")
    append(io, "lefts", [rec("k1", "x", 0), rec("k1", "y", 3), rec("k1", "z", 10),
                         rec("k2", "w", 1)])
    run(io)
    assert pairs(io, "pairs") == sorted([("x", "x"), ("x", "y"), ("y", "x"), ("y", "y"),
                                        ("z", "z"), ("w", "w")], key=repr)

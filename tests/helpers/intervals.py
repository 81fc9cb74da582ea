"""Helpers the stream-stream join tests share: times as seconds, two keyed
streams, and a run that returns each step's report."""

from __future__ import annotations

import datetime as dt
import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from splice.engine.io import StepIO
from splice.runtime.runner import StepReport, run_step
from splice.sql.plan import SourceStep

BASE = dt.datetime(2024, 1, 1)
TYPES = ("INNER", "LEFT", "RIGHT", "FULL", "CROSS")

SOURCES = """
CREATE STREAM lefts (k STRING, v STRING, ts TIMESTAMP)
  WITH (location='lefts', key='k', timestamp='ts');
CREATE STREAM rights (k STRING, v STRING, ts TIMESTAMP)
  WITH (location='rights', key='k', timestamp='ts');
"""


def at(seconds: float) -> dt.datetime:
    """The event time ``seconds`` after the test's base time."""
    return BASE + dt.timedelta(seconds=seconds)


def rec(k: str, v: str, seconds: float) -> dict[str, Any]:
    return {"k": k, "v": v, "ts": at(seconds).isoformat(sep=" ")}


def run(io: StepIO, threads: int = 4) -> dict[str, StepReport]:
    """Every step but the sources, upstream first; steps whose inputs are
    ready run side by side (their queries are independent; a micro-batch of
    a few rows mostly waits on the driver, so this keeps the tests quick).
    A Delta source's own step only checks its records for a missing event
    time; the joins read the source tables directly."""
    pending = [s for s in io.pipeline.steps if not isinstance(s, SourceStep)]
    done: dict[str, StepReport] = {}
    sources = {s.id for s in io.pipeline.steps if isinstance(s, SourceStep)}
    with ThreadPoolExecutor(max_workers=threads) as pool:
        while pending:
            ready = [s for s in pending if all(i in done or i in sources for i in s.inputs)]
            for step, report in zip(ready, pool.map(lambda s: run_step(s, io), ready),
                                    strict=True):
                done[step.id] = report
            pending = [s for s in pending if s.id not in done]
    return done


def pairs(io: StepIO, output: str, with_time: bool = False) -> list[tuple]:
    """An output's (lv, rv[, ROWTIME as seconds after the base time]) rows,
    sorted."""
    step = io.pipeline.outputs[output]
    base = int(BASE.replace(tzinfo=dt.UTC).timestamp() * 1_000_000)
    rows = (io.spark.read.format("delta").load(io.table_path(step))
            .selectExpr("lv", "rv", f"(unix_micros(ROWTIME) - {base}) / 1e6 AS t").collect())
    out = [(r["lv"], r["rv"], r["t"]) if with_time else (r["lv"], r["rv"]) for r in rows]
    return sorted(out, key=repr)


# -- what LANGUAGE.md says comes out ------------------------------------------
@dataclass(frozen=True)
class Form:
    """A way to write a window, and what it means."""

    name: str
    sources: str
    before: float = 0
    after: float = 0
    grace: float = 0
    size: float | None = None  # TUMBLE / HOP
    slide: float | None = None  # HOP
    types: tuple[str, ...] = TYPES[:4]
    timed: bool = True  # whether the first run's open windows are checked too

    def join(self, join_type: str) -> str:
        """The FROM clause of the form, with the join type."""
        raise NotImplementedError


def units(form: Form, records: list[tuple[str, str, float]]) -> list[tuple]:
    """(key, value, time, bucket): a window function puts a record in every
    window that holds it; an interval form keeps it whole (bucket None)."""
    if form.size is None:
        return [(k, v, t, None) for k, v, t in records]
    slide = form.slide or form.size
    out = []
    for k, v, t in records:
        start = math.floor(t / slide) * slide
        while start > t - form.size:
            out.append((k, v, t, start))
            start -= slide
    return out


def expected(form: Form, join_type: str, lefts: list, rights: list,
             stream_time: float) -> list[tuple]:
    """The rows LANGUAGE.md says come out once the stream time is reached
    (every record arrived in time, in one micro-batch per run)."""
    ls, rs = units(form, lefts), units(form, rights)

    def match(left: tuple, right: tuple) -> bool:
        same_key = join_type == "CROSS" or left[0] == right[0]
        if form.size is not None:
            return same_key and left[3] == right[3]
        return same_key and -form.before <= right[2] - left[2] <= form.after

    rows = [(le[1], ri[1]) for le in ls for ri in rs if match(le, ri)]
    span = form.size or 0  # a bucketed record's state lasts a window
    if join_type in ("LEFT", "FULL"):
        rows += [(le[1], None) for le in ls if not any(match(le, ri) for ri in rs)
                 and le[2] + (form.after or span) + form.grace <= stream_time]
    if join_type in ("RIGHT", "FULL"):
        rows += [(None, ri[1]) for ri in rs if not any(match(le, ri) for le in ls)
                 and ri[2] + (form.before or span) + form.grace <= stream_time]
    return sorted(rows, key=repr)

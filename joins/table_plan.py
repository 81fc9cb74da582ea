"""Which plan a table-table join's run takes: incremental maintenance or a
full recompute, chosen per micro-batch from the size of the change against
the size of the inputs (as Databricks' materialized views choose, Enzyme).

The incremental plan scans both inputs for the rows whose join value
changed, joins those, and MERGEs the result rows they touch; the MERGE
rewrites every file holding a touched row, and a result written by a
hash-partitioned join spreads any range of keys over all its files, so a
change of more than a few keys rewrites nearly the whole result. A
recompute joins both inputs whole and writes the result once. So a run
recomputes once the changed join values reach a fraction of the input rows
(``RECOMPUTE_FRACTION``, from ``bench/table_plan_bench.py``; its figures
in bench/RESULTS.md).

A change below that fraction can still touch most of the result: the
incremental plan's MERGE rewrites every file holding a touched result row,
and a hash-partitioned result spreads any set of keys over its files like
a random one, so ``k`` changed join values leave a file of ``F`` untouched
with probability about ``exp(-k/F)``. When no step reads the result, a run
whose MERGE would rewrite half the result's files or more recomputes (its
overwrite writes the whole result once, without the incremental plan's
scans and its MERGE's search for the touched files): 100 changed keys of 1M
touched both files of the benchmark's result, and the incremental run took
3.3 s against the recompute's 2.6 s (bench/RESULTS.md).

How a recompute writes depends on who reads the step's change feed. When a
step of the pipeline does, it writes only the rows that differ from the
stored result (one MERGE of those), so the step downstream stays
incremental; when none does, it overwrites the result, the cheapest write.

Spark settings override the choice for a session (``SPLICE_SPARK_CONF``,
``splice.yaml``'s ``conf``): ``splice.tableJoin.plan`` (``auto``, the
default; ``incremental``; ``recompute``) and
``splice.tableJoin.recomputeFraction`` and
``splice.tableJoin.recomputeFractionWhenRead``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from splice.engine.settings import (
    FRACTION_SETTING,
    PLAN_SETTING,
    READ_FRACTION_SETTING,
    SettingsError,
)
from splice.physical.joins import RECOMPUTE_FRACTION, RECOMPUTE_FRACTION_WHEN_READ, REWRITE_SHARE

if TYPE_CHECKING:  # Spark-free at import: EXPLAIN's nodes read the fraction
    from pyspark.sql import SparkSession



class Plan(StrEnum):
    INCREMENTAL = "incremental"
    RECOMPUTE = "recompute"


class Write(StrEnum):
    MERGE_CHANGED = "MERGE of the affected result rows"
    MERGE_DIFFERING = "MERGE of the rows that differ from the stored result"
    OVERWRITE = "overwrite of the result"


@dataclass(frozen=True)
class PlanChoice:
    """The plan one micro-batch ran, how it wrote, and why."""

    plan: Plan
    write: Write
    reason: str
    changed_rows: int
    input_rows: int | None

    def to_json(self) -> str:
        """The choice as the result's commit records it (Delta's
        ``userMetadata``), where the run's report finds it
        (``splice.engine.io.notes_since``)."""
        return json.dumps({"plan": {"name": self.plan.value, "write": self.write.value,
                                    "reason": self.reason}})


@dataclass(frozen=True)
class PlanSettings:
    """The session's overrides of the choice."""

    wanted: str = "auto"
    fraction: float = RECOMPUTE_FRACTION
    fraction_when_read: float = RECOMPUTE_FRACTION_WHEN_READ

    @classmethod
    def of(cls, spark: SparkSession) -> PlanSettings:
        """The settings of ``spark``'s session (the micro-batch's)."""
        conf = spark.conf
        return cls.parse(conf.get(PLAN_SETTING, None), conf.get(FRACTION_SETTING, None),
                         conf.get(READ_FRACTION_SETTING, None))

    @classmethod
    def parse(cls, wanted: str | None, fraction: str | None,
              fraction_when_read: str | None = None) -> PlanSettings:
        """The settings' values as set (None: not set); a bad one raises a
        :class:`SettingsError` that names it and what it takes."""
        plan = (wanted or "auto").strip().lower()
        if plan not in ("auto", "incremental", "recompute"):
            raise SettingsError(f"{PLAN_SETTING}={wanted!r}: expected auto, incremental "
                                "or recompute")
        return cls(plan, _share(FRACTION_SETTING, fraction, RECOMPUTE_FRACTION),
                   _share(READ_FRACTION_SETTING, fraction_when_read,
                          RECOMPUTE_FRACTION_WHEN_READ))


def _share(name: str, value: str | None, default: float) -> float:
    try:
        share = float(value) if value else default
    except ValueError:
        share = -1.0
    if not share >= 0:  # NaN too
        raise SettingsError(f"{name}={value!r}: expected a fraction of the input rows, "
                            f"such as {default}")
    return share


def rewritten_share(changed_values: int, result_files: int) -> float:
    """The expected share of the result's ``result_files`` files that a
    MERGE of the result rows of ``changed_values`` join values rewrites, the
    rows spread over the files as a hash-partitioned write spreads them
    (each value's rows in one file, any file alike). A value with several
    result rows (a many-to-many join) touches more: this is a lower bound."""
    if result_files <= 0:
        return 0.0
    return 1.0 - math.exp(-changed_values / result_files)


def choose(changed_rows: int, input_rows: int | None, read_downstream: bool,
           settings: PlanSettings = PlanSettings(), one_value: bool = False,
           result_files: int | None = None) -> PlanChoice:
    """The plan for a micro-batch of ``changed_rows`` changes (distinct
    changed join values) over inputs holding ``input_rows`` rows (None:
    not counted, which only a plan set by the settings allows);
    ``read_downstream``: a step of the pipeline reads the result's change
    feed (a recompute then MERGEs the rows that differ, and is chosen from
    ``fraction_when_read``); ``one_value``: the join has no equality
    (CROSS), so any change touches every result row and ``auto``
    recomputes; ``result_files``: the files of the stored result (None: not
    counted), from which, when no step reads the result, a change whose
    MERGE would rewrite ``REWRITE_SHARE`` of them or more recomputes."""
    threshold = settings.fraction_when_read if read_downstream else settings.fraction
    if input_rows is None:
        if settings.wanted == "auto":
            raise ValueError("the plan is chosen from the input rows: count them")
        share = 0.0
        figures = f"{changed_rows:,} changed join values"
    else:
        share = changed_rows / max(input_rows, 1)
        figures = (f"{changed_rows:,} changed join values, {share:.2%} of the "
                   f"{input_rows:,} input rows (a recompute from {threshold:.2%}"
                   f"{' when the result is read downstream' if read_downstream else ''})")
    if one_value:
        figures = "no equality: any change touches every result row"
    if settings.wanted != "auto":
        plan, reason = Plan(settings.wanted), f"{PLAN_SETTING}={settings.wanted}; {figures}"
    else:
        cheaper = one_value or share >= threshold
        if not (cheaper or read_downstream or result_files is None):
            rewrite = rewritten_share(changed_rows, result_files)
            cheaper = rewrite >= REWRITE_SHARE
            figures += (f"; its MERGE would rewrite about {rewrite:.0%} of the result's "
                        f"{result_files:,} files (a recompute from {REWRITE_SHARE:.0%})")
        plan, reason = (Plan.RECOMPUTE if cheaper else Plan.INCREMENTAL), figures
    if plan == Plan.INCREMENTAL:
        write = Write.MERGE_CHANGED
    else:
        write = Write.MERGE_DIFFERING if read_downstream else Write.OVERWRITE
    return PlanChoice(plan, write, reason, changed_rows, input_rows)


USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"


@contextmanager
def noted(spark: SparkSession, choice: PlanChoice) -> Iterator[None]:
    """The Delta commits made inside record ``choice`` (the micro-batch's
    session is the streaming query's own, so no other step's commit does)."""
    spark.conf.set(USER_METADATA, choice.to_json())
    try:
        yield
    finally:
        spark.conf.unset(USER_METADATA)

"""The table-table join's plan, chosen run by run on real tables: a small
change is maintained incrementally, a large one (or the first run)
recomputes; a recompute read downstream MERGEs only the rows that differ,
one that is not overwrites; every run's rows are the join's, and the run's
report and the result's commits say which plan ran and why."""

from __future__ import annotations

import re

import pytest
from splice.joins.table_plan import Write
from splice.runtime.runner import StepReport, run_pipeline

from tests.conftest import table_join_plan
from tests.helpers.pipeline import append, make_io, output_rows

pytestmark = pytest.mark.spark

SQL = """
CREATE TABLE l (id INT, lv INT) WITH (location='l', key='id');
CREATE TABLE r (id INT, rv INT) WITH (location='r', key='id');
CREATE TABLE joined AS SELECT l.id AS id, l.lv AS lv, r.rv AS rv FROM l JOIN r ON l.id = r.id;
CREATE TABLE big AS SELECT id, lv, rv FROM joined WHERE lv >= 1000;
CREATE TABLE padded AS SELECT l.id AS id, r.rv AS rv FROM l LEFT JOIN r ON l.id = r.id;
"""
KEYS = 1000


def _plans(io, reports: list[StepReport]) -> dict[str, tuple[str, str]]:
    by_step = {r.step_id: r for r in reports}
    found = {}
    for name in ("joined", "padded"):
        report = by_step[io.pipeline.outputs[name].id]
        assert report.metadata()["plan_name"] == report.plan["name"]
        found[name] = (report.plan["name"], report.plan["write"])
    return found


def test_each_run_takes_the_cheaper_plan_and_writes_the_join(spark, warehouse) -> None:
    io = make_io(spark, warehouse, SQL, name="plans")
    left = {i: i for i in range(KEYS)}
    right = {i: 10 * i for i in range(KEYS)}

    def run(new_left: dict[int, int | None], new_right: dict[int, int | None]):
        append(io, "l", [{"id": k, "lv": v} for k, v in new_left.items()])
        append(io, "r", [{"id": k, "rv": v} for k, v in new_right.items()])
        for table, new in ((left, new_left), (right, new_right)):
            for k, v in new.items():
                if v is None:
                    table.pop(k, None)
                else:
                    table[k] = v
        # joined is read downstream: its recompute is chosen from 1% here.
        with table_join_plan(spark, "auto", recomputeFractionWhenRead="0.01"):
            reports = run_pipeline(io.pipeline, io)
        joined = sorted(((k, v, right[k]) for k, v in left.items() if k in right), key=repr)
        assert output_rows(io, "joined", "id", "lv", "rv") == joined
        assert output_rows(io, "big", "id", "lv", "rv") == [j for j in joined if j[1] >= 1000]
        assert output_rows(io, "padded", "id", "rv") == sorted(
            ((k, right.get(k)) for k in left), key=repr)
        return reports

    node = io.pipeline.node(io.pipeline.outputs["joined"].id)
    assert node.explain().props["plan"].startswith("chosen per run")

    # The first run: every row is new, a recompute.
    first = run(dict(left), dict(right))
    assert _plans(io, first) == {"joined": ("recompute", Write.MERGE_DIFFERING.value),
                                 "padded": ("recompute", Write.OVERWRITE.value)}

    # One changed key of 2,000 input rows (0.05%): incremental.
    second = run({0: 1000}, {})
    assert _plans(io, second) == {"joined": ("incremental", Write.MERGE_CHANGED.value),
                                  "padded": ("incremental", Write.MERGE_CHANGED.value)}
    # padded, which no step reads, weighed the files its MERGE would rewrite
    # (one key: one file of the result's few); joined, which big reads, not.
    reasons = {r.step_id: r.plan["reason"] for r in second if r.plan}
    assert re.search(r"its MERGE would rewrite about \d+% of the result's [12] files",
                     reasons[io.pipeline.outputs["padded"].id])
    assert "files" not in reasons[io.pipeline.outputs["joined"].id]

    # 20 updates and a deletion (21 of 1,999 rows, 1.05%): a recompute,
    # which MERGEs only those 21 rows into the result the next step reads.
    joined_path = io.table_path(io.pipeline.outputs["joined"])
    third = run({i: 2000 + i for i in range(10, 30)}, {KEYS - 1: None})
    assert _plans(io, third) == {"joined": ("recompute", Write.MERGE_DIFFERING.value),
                                 "padded": ("recompute", Write.OVERWRITE.value)}
    by_step = {r.step_id: r for r in third}
    assert by_step[io.pipeline.outputs["joined"].id].rows_written == 21
    version = by_step[io.pipeline.outputs["joined"].id].delta_version
    changes = (spark.read.format("delta").option("readChangeFeed", "true")
               .option("startingVersion", version).option("endingVersion", version)
               .load(joined_path))
    kinds = sorted((r["_change_type"], r["id"]) for r in changes.collect())
    assert kinds == sorted([("delete", KEYS - 1),
                            *(("update_preimage", i) for i in range(10, 30)),
                            *(("update_postimage", i) for i in range(10, 30))])

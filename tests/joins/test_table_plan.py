"""The table-table join's plan choice, as a function of the change, the
inputs and the settings (no Spark: the runs are tests/joins/test_table_plan_runs.py)."""

from __future__ import annotations

import json

import pytest
from splice.engine.settings import SettingsError
from splice.joins.table_plan import (
    FRACTION_SETTING,
    PLAN_SETTING,
    READ_FRACTION_SETTING,
    RECOMPUTE_FRACTION,
    RECOMPUTE_FRACTION_WHEN_READ,
    REWRITE_SHARE,
    Plan,
    PlanSettings,
    Write,
    choose,
    rewritten_share,
)

TWO_PERCENT = PlanSettings.parse(None, "0.02", "0.02")


def test_a_change_below_the_fraction_is_maintained_incrementally() -> None:
    choice = choose(changed_rows=19, input_rows=1000, read_downstream=False,
                    settings=TWO_PERCENT)
    assert (choice.plan, choice.write) == (Plan.INCREMENTAL, Write.MERGE_CHANGED)
    assert choice.reason == ("19 changed join values, 1.90% of the 1,000 input rows "
                             "(a recompute from 2.00%)")


@pytest.mark.parametrize(("read_downstream", "write"), [
    (False, Write.OVERWRITE), (True, Write.MERGE_DIFFERING)])
def test_a_change_at_the_fraction_recomputes_and_writes_as_its_readers_need(
        read_downstream: bool, write: Write) -> None:
    choice = choose(changed_rows=20, input_rows=1000, read_downstream=read_downstream,
                    settings=TWO_PERCENT)
    assert (choice.plan, choice.write) == (Plan.RECOMPUTE, write)


def test_a_first_run_or_a_cross_join_recomputes() -> None:
    assert choose(500, 0, False).plan == Plan.RECOMPUTE  # inputs were empty
    cross = choose(1, 10**9, False, one_value=True)
    assert cross.plan == Plan.RECOMPUTE
    assert cross.reason == "no equality: any change touches every result row"


def test_the_settings_force_a_plan_or_move_the_fraction() -> None:
    forced = choose(1, 10**6, True, PlanSettings.parse("Recompute", None))
    assert (forced.plan, forced.write) == (Plan.RECOMPUTE, Write.MERGE_DIFFERING)
    assert forced.reason.startswith(f"{PLAN_SETTING}=recompute; 1 changed join values")
    assert choose(900, 1000, False, PlanSettings.parse("incremental", None)).plan == \
        Plan.INCREMENTAL
    assert choose(20, 1000, False, PlanSettings.parse(None, "0.5")).plan == Plan.INCREMENTAL
    # A set plan needs no count of the inputs (the run skips that job).
    uncounted = choose(7, None, False, PlanSettings.parse("incremental", None))
    assert (uncounted.plan, uncounted.reason) == (
        Plan.INCREMENTAL, f"{PLAN_SETTING}=incremental; 7 changed join values")
    with pytest.raises(ValueError, match="count them"):
        choose(7, None, False)
    assert PlanSettings.parse(None, None) == PlanSettings(
        "auto", RECOMPUTE_FRACTION, RECOMPUTE_FRACTION_WHEN_READ)


def test_a_small_change_that_would_rewrite_most_files_recomputes_when_nobody_reads() -> None:
    # 100 changed keys of 1M (0.01%, under the 0.1% fraction): into a result
    # of 2 files the MERGE rewrites both (bench/table_plan_bench.py --patterns
    # few: incremental 3.3 s, recompute 2.6 s); into 1,000 files, a tenth.
    two = choose(100, 10**6, False, result_files=2)
    assert (two.plan, two.write) == (Plan.RECOMPUTE, Write.OVERWRITE)
    assert two.reason.endswith("its MERGE would rewrite about 100% of the result's 2 files "
                               f"(a recompute from {REWRITE_SHARE:.0%})")
    many = choose(100, 10**6, False, result_files=1000)
    assert many.plan == Plan.INCREMENTAL
    assert "about 10% of the result's 1,000 files" in many.reason
    # One key into two files touches one of them: incremental; an empty
    # result has nothing to rewrite.
    assert choose(1, 10**6, False, result_files=2).plan == Plan.INCREMENTAL
    assert choose(1, 10**6, False, result_files=0).plan == Plan.INCREMENTAL
    # A step reads the result: a recompute would MERGE too, so the files do
    # not decide, nor when the files were not counted.
    assert choose(100, 10**6, True, result_files=2).plan == Plan.INCREMENTAL
    assert choose(100, 10**6, False).plan == Plan.INCREMENTAL


def test_the_rewritten_share_grows_with_the_keys_per_file() -> None:
    assert rewritten_share(0, 10) == 0.0
    assert rewritten_share(10, 0) == 0.0
    assert 0.39 < rewritten_share(1, 2) < 0.40   # 1 - e^-0.5
    assert rewritten_share(10**4, 2) == pytest.approx(1.0)
    assert rewritten_share(5, 10) < rewritten_share(10, 10) < rewritten_share(10, 5)


@pytest.mark.parametrize(("read_downstream", "default"), [
    (False, RECOMPUTE_FRACTION), (True, RECOMPUTE_FRACTION_WHEN_READ)])
def test_by_default_an_overwrite_pays_sooner_than_a_merge_of_the_differing_rows(
        read_downstream: bool, default: float) -> None:
    at = int(default * 10**6)
    assert choose(at - 1, 10**6, read_downstream).plan == Plan.INCREMENTAL
    assert choose(at, 10**6, read_downstream).plan == Plan.RECOMPUTE
    assert RECOMPUTE_FRACTION < RECOMPUTE_FRACTION_WHEN_READ


@pytest.mark.parametrize(("plan", "fraction", "message"), [
    ("cheapest", None, f"{PLAN_SETTING}='cheapest': expected auto, incremental or recompute"),
    (None, "2%", f"{FRACTION_SETTING}='2%': expected a fraction of the input rows, "
                 f"such as {RECOMPUTE_FRACTION}"),
    (None, "-1", f"{FRACTION_SETTING}='-1': expected a fraction"),
])
def test_a_bad_setting_names_itself_and_what_it_takes(plan: str | None, fraction: str | None,
                                                      message: str) -> None:
    with pytest.raises(SettingsError) as err:
        PlanSettings.parse(plan, fraction)
    assert str(err.value).startswith(message)


def test_a_bad_fraction_when_read_names_itself() -> None:
    with pytest.raises(SettingsError) as err:
        PlanSettings.parse(None, None, "nan")
    assert str(err.value) == (f"{READ_FRACTION_SETTING}='nan': expected a fraction of the "
                              "input rows, such as 0.25")


def test_the_choice_is_recorded_as_the_commit_note_the_report_reads() -> None:
    note = json.loads(choose(20, 1000, True, TWO_PERCENT).to_json())
    assert note == {"plan": {
        "name": "recompute", "write": "MERGE of the rows that differ from the stored result",
        "reason": "20 changed join values, 2.00% of the 1,000 input rows "
                  "(a recompute from 2.00% when the result is read downstream)"}}

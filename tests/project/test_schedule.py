"""The order the suite hands its tests to xdist's workers (tests/helpers/schedule.py)."""

from __future__ import annotations

from tests.conftest import ROOT
from tests.helpers.schedule import base_id, durations, from_report, longest_first

REPORT = """\
============================= slowest durations ==============================
552.06s call     tests/test_crash_safety.py::test_a_kill
15.00s call     tests/test_interval_matrix.py::test_every_join_type[GRACE PERIOD]
3.10s setup    tests/test_s3.py::test_demo@s3
2.50s call     tests/test_s3.py::test_demo@s3
1.20s call     tests/test_cli.py::test_quick
0.90s call     tests/test_cli.py::test_kill[output-committed@big_orders]
(12 durations < 0.005s hidden.)
"""


def test_a_report_gives_seconds_per_test_without_its_group() -> None:
    assert from_report(REPORT) == {
        "tests/test_crash_safety.py::test_a_kill": 552.1,
        "tests/test_interval_matrix.py::test_every_join_type[GRACE PERIOD]": 15.0,
        "tests/test_s3.py::test_demo": 5.6,  # setup and call
    }
    assert base_id("tests/t.py::k[output-committed@big_orders]") == \
        "tests/t.py::k[output-committed@big_orders]"
    assert base_id("tests/t.py::k[x]@kafka") == "tests/t.py::k[x]"


def test_the_longest_scopes_go_first_and_a_group_stays_whole() -> None:
    seconds = {"a.py::short": 2.0, "b.py::long": 100.0, "k.py::one": 30.0, "k.py::two": 40.0}
    groups = {"k.py::one": "kafka", "k.py::two": "kafka"}
    items = ["a.py::short", "k.py::one", "b.py::long", "new.py::unknown", "k.py::two",
             "a.py::other"]
    ordered = longest_first(items, str, lambda i: groups.get(i, i), seconds)
    # b (100 s), the kafka group (70 s) in its order, a's 2 s test, then the
    # unrecorded ones in collection order
    assert ordered == ["b.py::long", "k.py::one", "k.py::two", "a.py::short",
                       "new.py::unknown", "a.py::other"]


def test_every_recorded_test_is_in_a_file_of_the_suite() -> None:
    recorded = durations()
    assert recorded, "tests/durations.json is missing or empty"
    missing = {i.split("::")[0] for i in recorded} - {
        str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_*.py")}
    assert missing == set(), f"refresh tests/durations.json: {missing}"

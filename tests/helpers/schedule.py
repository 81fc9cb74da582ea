"""The order in which the suite hands its tests to pytest-xdist's workers:
the longest first.

Under ``--dist loadgroup`` a worker that finishes takes the next test (or
the next server group, whole) in collection order, which is the files'
alphabetical order. A long test collected late then runs alone at the end
while the other worker idles: in the whole suite of 3ac718c the
table-table differential test (about 150 s) ran last on one worker, the
other idle for its last 150 s. Handing out the longest first (the
classic longest-processing-time rule) leaves the short ones to even out
the end.

The durations come from a suite run's ``--durations=0`` report, kept in
``tests/durations.json`` (tests of 2 s or more; a test not in it counts as
short). Refresh it after a test grows or a long one is added::

    .venv/bin/python -m pytest --durations=0 -q > /tmp/suite.log
    .venv/bin/python -m tests.helpers.schedule /tmp/suite.log
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

DURATIONS = Path(__file__).resolve().parents[1] / "durations.json"  # tests/durations.json
KEPT_FROM_S = 2.0  # shorter tests are not worth a line of the file
# A line of pytest's --durations report: "12.34s call     tests/x.py::test_y@group".
_LINE = re.compile(r"^(\d+(?:\.\d+)?)s (?:setup|call|teardown) +(.+?)\s*$")
_GROUP = re.compile(r"@\w+$")

Item = TypeVar("Item")


def base_id(nodeid: str) -> str:
    """A test's id without the ``@group`` pytest-xdist adds to grouped ones
    (a parameter's ``@``, inside its brackets, stays)."""
    return _GROUP.sub("", nodeid)


def durations(path: Path = DURATIONS) -> dict[str, float]:
    """Seconds per test id (setup, call and teardown), as recorded."""
    return json.loads(path.read_text()) if path.exists() else {}


def longest_first(items: list[Item], nodeid: Callable[[Item], str],
                  scope: Callable[[Item], str], seconds: dict[str, float]) -> list[Item]:
    """``items`` with the scopes xdist schedules whole (a server's group, or
    one test) ordered by their recorded seconds, longest first; the
    collection order within a scope and among equals."""
    total: dict[str, float] = defaultdict(float)
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        key = scope(item)
        total[key] += seconds.get(base_id(nodeid(item)), 0.0)
        first.setdefault(key, index)
    ranked = sorted(enumerate(items), key=lambda pair: (-total[scope(pair[1])],
                                                        first[scope(pair[1])], pair[0]))
    return [item for _, item in ranked]


def from_report(text: str) -> dict[str, float]:
    """Seconds per test id of a ``--durations=0`` report, those of
    ``KEPT_FROM_S`` or more, rounded to tenths."""
    found: dict[str, float] = defaultdict(float)
    for line in text.splitlines():
        match = _LINE.match(line)
        if match:
            found[base_id(match.group(2))] += float(match.group(1))
    return {k: round(v, 1) for k, v in sorted(found.items()) if v >= KEPT_FROM_S}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.helpers.schedule SUITE_LOG (a pytest --durations=0 report)",
              file=sys.stderr)
        return 2
    found = from_report(Path(argv[0]).read_text())
    if not found:
        print(f"{argv[0]}: no --durations lines", file=sys.stderr)
        return 1
    DURATIONS.write_text(json.dumps(found, indent=0) + "\n")
    print(f"{DURATIONS}: {len(found)} tests, {sum(found.values()):,.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The Spark jobs of a run, from Spark's event log: which query ran how many
jobs, and how long they kept the cluster busy.

Job counts do not depend on how loaded the machine is, so two versions of
the code can be compared on a busy machine, where timings cannot. Record an
event log by starting the benchmark with::

    PYSPARK_SUBMIT_ARGS="--conf spark.eventLog.enabled=true \\
      --conf spark.eventLog.compress=false \\
      --conf spark.eventLog.dir=file:///tmp/events pyspark-shell" \\
      .venv/bin/python bench/stream_table_bench.py --rows 300000 --rounds 1

then summarise it (the last 12 queries)::

    .venv/bin/python bench/spark_jobs.py /tmp/events/<app>/events_1_<app> --last 12
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Group:
    """Consecutive jobs of one streaming query run (one job group), or of
    the driver outside any query (group ``-``)."""

    group: str
    name: str
    jobs: int = 0
    busy_ms: int = 0
    first_ms: int = 0
    last_ms: int = 0


def read_jobs(path: Path) -> list[dict]:
    jobs: dict[int, dict] = {}
    with path.open() as events:
        for line in events:
            event = json.loads(line)
            kind = event["Event"]
            if kind == "SparkListenerJobStart":
                props = event.get("Properties") or {}
                description = (props.get("spark.job.description") or "").split("\n")[0]
                jobs[event["Job ID"]] = {"group": props.get("spark.jobGroup.id") or "-",
                                         "name": description.removeprefix("Delta: "),
                                         "start": event["Submission Time"]}
            elif kind == "SparkListenerJobEnd" and event["Job ID"] in jobs:
                jobs[event["Job ID"]]["end"] = event["Completion Time"]
    return [jobs[k] for k in sorted(jobs)]


def groups(jobs: list[dict]) -> list[Group]:
    found: list[Group] = []
    for job in jobs:
        end = job.get("end", job["start"])
        if not found or found[-1].group != job["group"]:
            found.append(Group(job["group"], job["name"], first_ms=job["start"]))
        current = found[-1]
        current.name = current.name or job["name"]
        current.jobs += 1
        current.busy_ms += end - job["start"]
        current.last_ms = end
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("event_log", type=Path)
    parser.add_argument("--last", type=int, default=0, help="only the last N groups")
    args = parser.parse_args()
    jobs = read_jobs(args.event_log)
    print(f"{len(jobs)} jobs")
    for g in groups(jobs)[-args.last:] if args.last else groups(jobs):
        print(f"{g.group[:8]:8s} {g.jobs:3d} jobs  busy {g.busy_ms:6d} ms  "
              f"span {g.last_ms - g.first_ms:6d} ms  {g.name}")


if __name__ == "__main__":
    main()

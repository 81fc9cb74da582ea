"""Where the driver JVM's CPU goes while table-table steps run, sampled by
Java Flight Recorder (built into the JDK, no agent to install).

The workload is the test suite's chain pipeline (tests/joins/test_table_chains.py:
4 keyed tables, 10 chains of 3 and 4 tables, 25 table-table steps), run in a
session with the suite's own settings (interpreted expressions, C1 alone,
the incremental plan), twice per fresh warehouse, ``--reps`` times. JFR
records the last repetition (the JIT warm), for at most ``--record``
seconds; the report groups every sample by what it was doing::

    .venv/bin/python bench/jvm_profile.py chains --reps 2 --out /tmp/chains.jfr
    .venv/bin/python bench/jvm_profile.py report /tmp/chains.jfr

Each run prints its wall time and the JVM's CPU; ``--conf KEY=VALUE`` tries
a Spark setting on the same workload (e.g.
``spark.databricks.delta.writeChecksumFile.enabled=true``).

Figures and what they say: docs/decisions/README.md ("Testing", where the suite's
CPU goes).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# Share of samples whose stack holds the frame (a substring of
# "package/Class.method"), in the report's order.
CATEGORIES = {
    "Java serialization (closures, task binaries)": "java/io/ObjectOutputStream.writeObject",
    "Java deserialization (tasks on executors)": "java/io/ObjectInputStream.readObject",
    "closure cleaning (SparkContext.clean)": "SparkClosureCleaner$.clean",
    "analysis (Analyzer.execute)": "analysis/Analyzer.execute",
    "Delta MERGE": "MergeIntoCommand",
    "Delta state reconstruction (Snapshot.allFiles)": "Snapshot.allFiles",
    "Delta streaming source (CDF)": "delta/sources/DeltaSource",
    "Dataset.persist": "Dataset.persist",
    "generated projections (file reads)": "GenerateUnsafeProjection",
}
# A sample taken in a call from Python is named by the method Python called.
_PY4J = "MethodInvoker.invoke"
_NOISE = ("jdk/internal/reflect", "java/lang/reflect", "$$Lambda")


def samples(jfr: Path) -> Iterator[tuple[str, list[str]]]:
    """(thread name, frames innermost first) of every execution sample."""
    out = subprocess.Popen(["jfr", "print", "--events", "jdk.ExecutionSample",
                            "--stack-depth", "4096", str(jfr)],
                           stdout=subprocess.PIPE, text=True)
    assert out.stdout is not None
    thread, frames, in_stack = "", [], False
    for line in out.stdout:
        text = line.strip()
        if text.startswith("sampledThread = "):
            thread = text.split('"')[1]
        elif text.startswith("stackTrace = ["):
            frames, in_stack = [], True
        elif in_stack and text == "]":
            in_stack = False
            yield thread, frames
        elif in_stack and text != "...":
            name = text.split("(")[0]
            frames.append(name.replace(".", "/", name.count(".") - 1))
    out.wait()


def entry(thread: str, frames: list[str]) -> str:
    """What a sample was part of: the JVM method Python called, or the
    Spark thread that ran it."""
    calls = [i for i, f in enumerate(frames) if f.endswith(_PY4J)]
    if calls:
        inner = [f for f in frames[:calls[0]] if not any(n in f for n in _NOISE)]
        return "called from Python: " + (inner[-1].rsplit("/", 1)[-1] if inner else "?")
    for name in ("Executor task", "dag-scheduler", "stream execution"):
        if thread.startswith(name):
            return f"thread: {name}"
    return "thread: other"


def report(jfr: Path) -> None:
    total, by_entry, by_category = 0, Counter(), Counter()
    for thread, frames in samples(jfr):
        total += 1
        by_entry[entry(thread, frames)] += 1
        for name, frame in CATEGORIES.items():
            if any(frame in f for f in frames):
                by_category[name] += 1
    print(f"{total} samples")
    print("by what the sample was part of:")
    for name, n in by_entry.most_common(12):
        print(f"  {100 * n / total:5.1f}%  {name}")
    print("by what is on the stack (a sample may count in several):")
    for name in CATEGORIES:
        print(f"  {100 * by_category[name] / total:5.1f}%  {name}")


def chains(reps: int, record: int, out: Path, conf: dict[str, str]) -> None:
    from common import jvm_cpu_seconds
    from splice.engine.session import start_session
    from splice.resources.warehouse import WarehouseResource
    from splice.runtime.runner import run_pipeline

    from tests.conftest import suite_settings, table_join_plan
    from tests.helpers.pipeline import append, make_io
    from tests.joins.test_table_chains import _changelog, _sql

    os.environ.setdefault("SPLICE_MAINTAIN_EVERY", "0")
    spark = start_session(suite_settings("-XX:FlightRecorderOptions:stackdepth=2048", conf))
    jvm = spark._jvm  # type: ignore[attr-defined]
    pid = str(jvm.java.lang.ProcessHandle.current().pid())
    rng = random.Random(5)
    for rep in range(reps):
        if rep == reps - 1:  # the last rep, JIT warm: recorded
            subprocess.run(["jcmd", pid, "JFR.start", "name=splice", "settings=profile",
                            f"duration={record}s"], check=True, capture_output=True)
        io = make_io(spark, WarehouseResource(root=tempfile.mkdtemp() + "/wh"), _sql(),
                     name="chains")
        for run in range(2):
            for table in range(1, 5):
                append(io, f"t{table}", _changelog(rng, table, 6))
            start, cpu = time.monotonic(), jvm_cpu_seconds(spark)
            with table_join_plan(spark, "incremental"):
                run_pipeline(io.pipeline, io)
            print(f"rep {rep} run {run}: {time.monotonic() - start:.1f} s, "
                  f"JVM CPU {jvm_cpu_seconds(spark) - cpu:.1f} s", flush=True)
    subprocess.run(["jcmd", pid, "JFR.dump", "name=splice", f"filename={out}"], check=True,
                   capture_output=True)
    spark.stop()
    report(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("chains", help="run the chain pipeline under JFR and report")
    run.add_argument("--reps", type=int, default=2)
    run.add_argument("--record", type=int, default=150,
                     help="seconds of the last repetition recorded, at most")
    run.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "chains.jfr")
    run.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                     help="a Spark setting to try (repeatable)")
    again = sub.add_parser("report", help="report a recording made before")
    again.add_argument("jfr", type=Path)
    args = parser.parse_args()
    if args.command == "chains":
        chains(args.reps, args.record, args.out,
               dict(item.split("=", 1) for item in args.conf))
    else:
        report(args.jfr)


if __name__ == "__main__":
    main()

"""What the Spark benchmarks share: the session, a scratch folder, running a
compiled pipeline's steps, and rounds that alternate the two contenders."""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pyspark.sql import DataFrame, SparkSession
from splice.engine.io import StepIO
from splice.resources.spark import SparkResource
from splice.resources.warehouse import WarehouseResource
from splice.runtime.compile import compile_text
from splice.runtime.runner import run_step
from splice.runtime.workspace import Workspace
from splice.sql.plan import Step


def session() -> SparkSession:
    """The session Splice uses by default (local[2], Delta), with a larger
    heap for a million rows a side."""
    return SparkResource(conf={"spark.driver.memory": "6g"}).session()


@contextmanager
def scratch() -> Iterator[Path]:
    work = Path(tempfile.mkdtemp(prefix="splice-bench-"))
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


def pipeline_io(spark: SparkSession, warehouse: WarehouseResource, sql: str,
                name: str) -> StepIO:
    return Workspace(compile_text(sql, file=f"{name}.sql", name=name), warehouse=warehouse,
                     spark=spark).io


def forget_table_snapshots(spark: SparkSession) -> None:
    """Empty Delta's in-memory cache of table logs and snapshots, as in a new
    process.

    A first run happens in a new process (``splice run``, or a Dagster run
    worker), where every table's log is read and its state rebuilt on first
    use. Within one benchmark process the hand-written job's input tables
    would otherwise stay cached from round to round, while the tables a new
    pipeline's steps just wrote are new: first runs of both start cold."""
    spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()  # type: ignore[union-attr]


def jvm_cpu_seconds(spark: SparkSession) -> float:
    """CPU seconds the session's JVM (this process's child) has used so far,
    user and system."""
    return cpu_seconds(spark.sparkContext._gateway.proc.pid)  # type: ignore[union-attr]


def cpu_seconds(pid: int) -> float:
    """CPU seconds the process ``pid`` has used so far, user and system
    (Linux's /proc)."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed_steps(io: StepIO, which: Callable[[Step], bool],
                cold: bool = False) -> tuple[float, float]:
    """Run every step once, upstream first: (seconds of the steps ``which``
    picks, seconds of the others). With ``cold``, each picked step starts
    with Delta's snapshot cache empty (:func:`forget_table_snapshots`)."""
    picked = other = 0.0
    for step in io.pipeline.steps:
        if cold and which(step):
            forget_table_snapshots(io.spark)
        began = time.monotonic()
        run_step(step, io)
        if which(step):
            picked += time.monotonic() - began
        else:
            other += time.monotonic() - began
    return picked, other


@dataclass
class Rounds:
    """Each contender's seconds, round by round. The best (smallest) time is
    what each can do; the median is what it usually does: on two shared
    cores one lucky or unlucky round moves the best-of ratio by a tenth."""

    splice: list[float] = field(default_factory=list)
    other: list[float] = field(default_factory=list)

    @property
    def best_splice(self) -> float:
        return min(self.splice)

    @property
    def best_other(self) -> float:
        return min(self.other)

    def ratio_of_rates(self) -> float:
        """Splice's best throughput over the other's (same rows for both)."""
        return self.best_other / self.best_splice

    def median_ratio_of_rates(self) -> float:
        return statistics.median(self.other) / statistics.median(self.splice)


def alternate(rounds: int, splice: Callable[[int], float],
              other: Callable[[int], float]) -> Rounds:
    """``rounds`` rounds of both, Splice first in odd rounds and second in even
    ones (so neither always runs on a warmer JVM); each callable gets the round
    number and returns its seconds."""
    times = Rounds()
    for n in range(1, rounds + 1):
        order = (("splice", splice), ("other", other))
        for name, run in order if n % 2 else order[::-1]:
            getattr(times, name).append(run(n))
    return times


def against_hand_written(
    rows: int, rounds: int, what: str,
    generate: Callable[[SparkSession, WarehouseResource, int], None],
    splice_run: Callable[[SparkSession, WarehouseResource, str, bool],
                         tuple[float, float, int]],
    hand_run: Callable[[SparkSession, Path, WarehouseResource], tuple[float, int]],
    incremental: Callable[[SparkSession, WarehouseResource, int, int], None] | None = None,
    goal: float = 0.95,
) -> None:
    """A compiled join step against the same join hand-written in PySpark, on
    the same generated Delta tables: a warm-up of both on 20,000 rows, then
    ``rounds`` alternating rounds; prints each round and the best throughputs.

    ``splice_run`` returns (join seconds, seconds of the other steps, output
    rows so far), ``hand_run`` (seconds, output rows so far). First runs
    start cold, as in a new process: ``splice_run``'s last argument asks it
    to empty Delta's snapshot cache before its join, and it is emptied before
    every hand-written first run (:func:`forget_table_snapshots`). With
    ``incremental(spark, inputs, first, rows)``, which appends ``rows`` more
    input rows, ``rounds`` more rounds follow in which both keep the
    checkpoint of their first round and process only the appended rows."""
    spark = session()
    with scratch() as work:
        inputs = WarehouseResource(root=str(work / "inputs"))
        began = time.monotonic()
        generate(spark, inputs, rows)
        print(f"generated {what} in {time.monotonic() - began:.1f} s", flush=True)
        warm = WarehouseResource(root=str(work / "warm"))
        generate(spark, warm, 20_000)
        splice_run(spark, warm, "warm", True)  # warm the JVM up on both paths first
        hand_run(spark, work / "warm-hand", warm)
        counts: dict[str, int] = {}

        def splice(n: int) -> float:
            join, others, counts["splice"] = splice_run(spark, inputs, str(n), True)
            print(f"round {n}: splice  join {join:6.1f} s  "
                  f"{counts['splice'] / join:10,.0f} rows/s  ({counts['splice']:,} rows; "
                  f"the other steps {others:.1f} s)", flush=True)
            return join

        def hand(n: int) -> float:
            forget_table_snapshots(spark)
            seconds, counts["hand"] = hand_run(spark, work / f"hand{n}", inputs)
            print(f"round {n}: pyspark join {seconds:6.1f} s  "
                  f"{counts['hand'] / seconds:10,.0f} rows/s", flush=True)
            return seconds

        times = alternate(rounds, splice, hand)
        assert counts["hand"] == counts["splice"], f"the two joins disagree: {counts}"
        _report("first runs", counts["splice"], times, goal)
        if incremental is None:
            return
        # Round 1's pipeline and query again, on their checkpoints: every
        # round appends `rows` more input rows, and both process only those.
        added = {"splice": 0, "hand": 0}

        def again(name: str, run: Callable[[], tuple[float, int]]) -> Callable[[int], float]:
            def go(n: int) -> float:
                if added[name] < n:  # the first of the two in a round appends
                    incremental(spark, inputs, rows * n, rows)
                    added["splice"] = added["hand"] = n
                seconds, total = run()
                print(f"incremental round {n}: {name:6s} join {seconds:6.1f} s "
                      f"{rows / seconds:10,.0f} rows/s  ({total:,} rows so far)", flush=True)
                counts[name] = total
                return seconds
            return go

        def splice_again() -> tuple[float, int]:
            join, _, total = splice_run(spark, inputs, "1", False)  # round 1's pipeline
            return join, total

        times = alternate(rounds, again("splice", splice_again),
                         again("hand", lambda: hand_run(spark, work / "hand1", inputs)))
        assert counts["hand"] == counts["splice"], f"the two joins disagree: {counts}"
        _report("incremental runs", rows, times, goal)


def _report(what: str, rows: int, times: Rounds, goal: float) -> None:
    print(f"best {what}: splice {rows / times.best_splice:,.0f} rows/s, hand-written PySpark "
          f"{rows / times.best_other:,.0f} rows/s, ratio {times.ratio_of_rates():.3f}; "
          f"median ratio {times.median_ratio_of_rates():.3f} (goal: at least {goal:g})")


def write_hand_written(out: DataFrame, root: Path, began: float) -> tuple[float, int]:
    """Run a hand-written streaming query into a Delta table under ``root``,
    as one would: ``availableNow``, its own checkpoint. (seconds since
    ``began``, output rows)."""
    query = (out.writeStream.format("delta").outputMode("append")
             .option("checkpointLocation", str(root / "checkpoint"))
             .trigger(availableNow=True).start(str(root / "out")))
    query.awaitTermination()
    seconds = time.monotonic() - began
    return seconds, out.sparkSession.read.format("delta").load(str(root / "out")).count()


def argument_parser(description: str, rows_help: str,
                    variants: str | None = None) -> argparse.ArgumentParser:
    """``--rows`` and ``--rounds``; ``--variants`` (comma-separated, all of
    ``variants`` by default) for a benchmark that has them."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--rows", type=int, default=1_000_000, help=rows_help)
    parser.add_argument("--rounds", type=int, default=2, help="runs of each, alternating")
    if variants is not None:
        parser.add_argument("--variants", default=variants, help="which to run, comma-separated")
    return parser


def arguments(description: str, rows_help: str,
              variants: str | None = None) -> argparse.Namespace:
    """:func:`argument_parser`'s arguments, parsed."""
    return argument_parser(description, rows_help, variants).parse_args()

"""What the Spark benchmarks share: the session, a scratch folder, running a
compiled pipeline's steps, and rounds that alternate the two contenders."""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pyspark.sql import SparkSession

from engine.io import StepIO
from engine.runner import run_step
from resources.spark import SparkResource
from resources.warehouse import WarehouseResource
from splice.compile import compile_text
from sql.plan import Step


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
    return StepIO(spark=spark, warehouse=warehouse,
                  pipeline=compile_text(sql, file=f"{name}.sql", name=name))


def timed_steps(io: StepIO, which: Callable[[Step], bool]) -> tuple[float, float]:
    """Run every step once, upstream first: (seconds of the steps ``which``
    picks, seconds of the others)."""
    picked = other = 0.0
    for step in io.pipeline.steps:
        began = time.monotonic()
        run_step(step, io)
        if which(step):
            picked += time.monotonic() - began
        else:
            other += time.monotonic() - began
    return picked, other


@dataclass
class Best:
    """The best (smallest) time of each contender over the rounds."""

    splice: float = float("inf")
    other: float = float("inf")

    def ratio_of_rates(self) -> float:
        """Splice's throughput over the other's (same rows for both)."""
        return self.other / self.splice


def alternate(rounds: int, splice: Callable[[int], float], other: Callable[[int], float]) -> Best:
    """``rounds`` rounds of both, Splice first in odd rounds and second in even
    ones (so neither always runs on a warmer JVM); each callable gets the round
    number and returns its seconds."""
    best = Best()
    for n in range(1, rounds + 1):
        order = (("splice", splice), ("other", other))
        for name, run in order if n % 2 else order[::-1]:
            seconds = run(n)
            setattr(best, name, min(getattr(best, name), seconds))
    return best

"""Kill runs at random, for as long as you like, and check nothing is lost.

The deterministic matrix (tests/crash/test_crash_safety.py) kills every named
commit point once. This loop adds chance: round after round of new data for
the crash-safety pipeline (tests/crash/pipeline.sql), each round's run is
killed a random number of times, at random named points (``SPLICE_KILL_AT``)
or after a random delay (SIGKILL to the run's whole process group, wherever
it is), then completed; after every round every output and dead letter must
equal a warehouse that got the same data in uninterrupted runs.

    .venv/bin/python bench/kill_loop.py --minutes 60 [--seed 7]

Exits 1 at the first difference, printing the warehouses to look at.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from splice.engine.io import StepIO  # noqa: E402
from splice.resources.spark import SparkResource  # noqa: E402
from splice.resources.warehouse import WarehouseResource  # noqa: E402
from splice.runtime.compile import compile_path  # noqa: E402
from splice.runtime.workspace import Workspace  # noqa: E402

from tests.helpers.crash_harness import (  # noqa: E402
    PIPELINE,
    add_round,
    all_kills,
    complete,
    differences,
    run_killed,
    table_rows,
)


def kill_after(io: StepIO, seconds: float) -> bool:
    """``splice run`` killed (its process group, JVM included) after
    ``seconds``; False when it ended first."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "splice.cli", "run", str(PIPELINE),
         "--warehouse", io.warehouse.root],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, env={**os.environ, "SPLICE_DRIVER_MEMORY": "1g"})
    try:
        proc.wait(timeout=seconds)
        return False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=60)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--max-kills", type=int, default=3, help="kills per round, at most")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    spark = SparkResource().session()
    pipeline = compile_path(PIPELINE)
    root = Path(tempfile.mkdtemp(prefix="splice-kill-loop-"))
    reference, crashed = (Workspace(pipeline, warehouse=WarehouseResource(root=str(root / name)),
                                    spark=spark).io
                          for name in ("reference", "crashed"))
    points = all_kills(pipeline)
    print(f"seed {seed}; warehouses under {root}", flush=True)
    deadline = time.monotonic() + args.minutes * 60
    rounds = named = timed = 0
    while time.monotonic() < deadline:
        add_round(reference, rounds)
        complete(reference)
        add_round(crashed, rounds)
        chosen = sorted(rng.sample(range(len(points)), rng.randint(0, args.max_kills)))
        for index in chosen:  # in the order a run reaches them
            run_killed(crashed, points[index])
            named += 1
        if rng.random() < 0.5:
            timed += kill_after(crashed, rng.uniform(5, 40))
        complete(crashed)
        problems = differences(table_rows(reference), table_rows(crashed))
        rounds += 1
        print(f"round {rounds}: {len(chosen)} named kills "
              f"({', '.join(str(points[i]) for i in chosen) or 'none'}); "
              f"totals: {named} named, {timed} timed kills; "
              f"{'DIFFERENT: ' + str(problems) if problems else 'outputs equal'}", flush=True)
        if problems:
            return 1
    print(f"{rounds} rounds, {named} named and {timed} timed kills, outputs equal after each")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Running steps: every step is one incremental Structured Streaming run.

A step's query runs with ``trigger(availableNow=True)`` on the step's own
checkpoint: it processes what arrived since its last run, then stops, so the
next run continues where this one stopped. Every step, sources included, is
its physical node's query (built by the executor the registry bound for the
node's kind) run by its :class:`~splice.runtime.step_run.StepRun`. The CLI,
the Dagster assets, ``splice test`` and ``serve`` all run steps through the
functions here, with the StepIO a :class:`~splice.runtime.workspace.Workspace`
built.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import replace

from splice.engine import definitions
from splice.engine.io import StepIO
from splice.engine.session import own_session
from splice.physical.base import PhysicalPlan
from splice.runtime.executors import bind
from splice.runtime.maintenance import MaintenancePolicy, after_run
from splice.runtime.step_run import StepFailed, StepReport, StepRun
from splice.runtime.tenure import check_held, hold
from splice.sql.plan import Step

__all__ = ["StepFailed", "StepReport", "bound_to", "run_pipeline", "run_step", "run_steps"]


def bound_to(pipeline: PhysicalPlan, io: StepIO) -> StepIO:
    """``io`` bound to ``pipeline``'s executors: the runtime runs only a
    physical plan (compile it: ``splice.compile_path``). A StepIO a
    Workspace built for this plan is bound already; one for another
    version of the pipeline (a test's edited SQL) is bound to this one."""
    if not isinstance(pipeline, PhysicalPlan):
        raise TypeError(f"pipeline '{pipeline.name}' is not compiled: the runtime runs a "
                        "physical plan (splice.compile_path, or splice.physical.planner.plan)")
    if io.pipeline is pipeline and io.executors is not None:
        return io
    return bind(io, pipeline)


def run_step(step: Step, io: StepIO, checked: bool = False) -> StepReport:
    """Run one step once (:meth:`StepRun.run`)."""
    return StepRun(io, step.id).run(checked)


def run_pipeline(pipeline: PhysicalPlan, io: StepIO,
                 on_step: Callable[[int, Step, StepReport | None], None] | None = None,
                 parallel: int = 4, wait: float | None = None,
                 maintenance: MaintenancePolicy | None = None,
                 rebuild: list[str] | None = None) -> list[StepReport]:
    """:func:`run_steps` holding the pipeline's lock (runtime/lock.py: waits
    ``wait`` seconds for another run, None: as long as it takes), then the
    maintenance the policy says is due (runtime/maintenance.py). The steps
    ``rebuild`` names (a closed set: definitions.rebuild_targets) are
    dropped first, under the lock, to be recomputed from their sources."""
    # A bad setting stops the run here, before it writes anything.
    policy = maintenance or MaintenancePolicy.from_env()
    # Refuses a name or output another pipeline owns (ClaimRefused), a
    # pipeline another run holds (LockBusy); stops at a lost lock (TenureLost).
    io = bound_to(pipeline, io)
    with hold(pipeline, io.warehouse, wait=wait):
        if rebuild:
            definitions.drop(pipeline, io, rebuild)
        reports = run_steps(pipeline, io, on_step, parallel)
        after_run(io, policy, lambda: run_steps(pipeline, io, None, parallel))
    return reports


def run_steps(pipeline: PhysicalPlan, io: StepIO,
              on_step: Callable[[int, Step, StepReport | None], None] | None = None,
              parallel: int = 4, only: Collection[str] | None = None) -> list[StepReport]:
    """Every step once (``only``: the steps of these ids), each after the
    steps it reads; the reports in the pipeline's order.

    Steps whose inputs are done run side by side, up to ``parallel`` at once
    (a step of a few rows mostly waits on Spark's scheduling and Delta's log,
    not on the cores); ``parallel=1`` runs them one by one in the pipeline's
    order. Each runs in its own Spark session: they share the
    SparkContext, but a MERGE's batch mark is a session setting, and
    two steps must not see each other's. On a failure no further step starts;
    the ones running finish, and the first failure is raised.
    """
    io = bound_to(pipeline, io)
    plan = pipeline
    runnable = [s for s in plan.steps if s.id not in plan.explain
                and (only is None or s.id in only)]
    definitions.check(plan, io, [s.id for s in runnable])
    index = {s.id: i for i, s in enumerate(runnable)}
    reports: dict[str, StepReport] = {}
    lock = threading.Lock()

    def run_one(step: Step) -> StepReport:
        check_held(io.warehouse, plan.name)
        if on_step:
            with lock:
                on_step(index[step.id], step, None)
        report = run_step(step, replace(io, spark=own_session(io.spark)), checked=True)
        if on_step:
            with lock:
                on_step(index[step.id], step, report)
        return report

    if parallel <= 1:  # one by one, in the pipeline's order
        return [run_one(step) for step in runnable]
    pending = list(runnable)
    running: dict[Future[StepReport], Step] = {}
    failure: BaseException | None = None
    with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
        while pending or running:
            if failure is None:
                ready = [s for s in pending
                         if all(i in reports or i not in index for i in s.inputs)]
                for step in ready:
                    pending.remove(step)
                    running[pool.submit(run_one, step)] = step
            elif not running:
                break
            if not running:  # steps come in dependency order: cannot happen
                raise RuntimeError(f"no step of {[s.id for s in pending]} can start")
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                step = running.pop(future)
                try:
                    reports[step.id] = future.result()
                except BaseException as err:
                    failure = failure or err
    if failure is not None:
        raise failure
    return [reports[s.id] for s in runnable]

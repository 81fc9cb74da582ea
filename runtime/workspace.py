"""The one way in: a compiled pipeline with its settings, its warehouse and
(started when first needed) its Spark session.

Everything that runs a pipeline goes through a :class:`Workspace`: ``splice
run``, ``serve``, ``maintain``, ``show``, ``splice test``, the demo, the
Dagster assets and maintenance job, and the benchmarks. It is the only
place that builds a :class:`~splice.engine.io.StepIO` (bound once to the
plan's executors), so the settings, the session and the plan are put
together one way: the settings with the plan's Spark connectors, then the
session, then the StepIO::

    from splice import Workspace, compile_path

    ws = Workspace(compile_path("pipelines/demo"))
    ws.run()
    ws.table("orders_enriched").show()

A session the caller already has (a test's, Dagster's resource) is handed
in with ``spark=``; the warehouse defaults to the settings' (a Dagster
``WarehouseResource`` is one, and may be handed in with ``warehouse=``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from splice.engine import definitions
from splice.engine.io import StepIO, delta_exists
from splice.engine.registry_schemas import RegistrySchemas
from splice.engine.schema_registry import registry_config
from splice.engine.session import start_session
from splice.engine.settings import SpliceSettings, Warehouse
from splice.engine.storage import storage_packages
from splice.physical.base import PhysicalPlan
from splice.runtime.compile import compile_path
from splice.runtime.executors import bind
from splice.runtime.maintenance import MaintenancePolicy, TableMaintenance, maintain
from splice.runtime.runner import run_pipeline, run_step, run_steps
from splice.runtime.serve import ServedStep, ServeOptions, serve
from splice.runtime.step_run import StepReport
from splice.runtime.tenure import hold
from splice.sql.plan import Step

OnStep = Callable[[int, Step, StepReport | None], None]


def step_named(plan: PhysicalPlan, name: str) -> Step | None:
    """The step an output, a source or a step id names; None if none."""
    step = plan.outputs.get(name) or plan.sources.get(name)
    return step or next((s for s in plan.steps if s.id == name), None)


def plan_packages(plan: PhysicalPlan) -> tuple[str, ...]:
    """The Spark packages ``plan`` needs beyond Delta's: its nodes'
    connectors (Kafka's) and its sources' storage (hadoop-aws for s3a://)."""
    return tuple(dict.fromkeys([*plan.packages(),
                                *storage_packages(plan.source_locations())]))


class Workspace:
    """A compiled pipeline ready to run, serve, maintain, test and read."""

    def __init__(self, plan: PhysicalPlan, settings: SpliceSettings | None = None, *,
                 warehouse: Warehouse | None = None, spark: SparkSession | None = None) -> None:
        if not isinstance(plan, PhysicalPlan):
            raise TypeError(f"pipeline '{plan.name}' is not compiled: a Workspace runs a "
                            "physical plan (splice.compile_path)")
        self.plan = plan
        # The Spark connectors the plan's readers need (Kafka's), with Delta's.
        self.settings = (settings or SpliceSettings.from_env()).with_packages(
            plan_packages(plan))
        self.warehouse = warehouse or self.settings.warehouse_layout()
        self._spark = spark
        self._io: StepIO | None = None

    @classmethod
    def open(cls, path: str | Path, settings: SpliceSettings | None = None,
             **kwargs: Any) -> Workspace:
        """The workspace of the pipeline at ``path`` (a .sql file or a folder
        of them), compiled: every SQL mistake raised together (SqlErrors)."""
        return cls(compile_path(path, RegistrySchemas(settings)), settings, **kwargs)

    @property
    def name(self) -> str:
        return self.plan.name

    def start(self) -> SparkSession:
        """The Spark session, started with the settings on first use."""
        if self._spark is None:
            self._spark = start_session(self.settings)
        return self._spark

    @property
    def spark(self) -> SparkSession:
        return self.start()

    @property
    def io(self) -> StepIO:
        """Where the plan's steps live and how they are read, bound once to
        the plan's executors."""
        if self._io is None:
            self._io = bind(StepIO(spark=self.start(), warehouse=self.warehouse,
                                   pipeline=self.plan,
                                   kafka_bootstrap=self.settings.kafka_bootstrap,
                                   kafka_lost_records=self.settings.kafka_lost_records,
                                   processing_guarantee=self.settings.processing_guarantee,
                                   schema_registry=(registry_config(self.settings)
                                                    if self.settings.schema_registry_url
                                                    else None)),
                            self.plan)
        return self._io

    # -- running ------------------------------------------------------------

    def run(self, on_step: OnStep | None = None, parallel: int = 4,
            wait: float | None = None, maintenance: MaintenancePolicy | None = None,
            rebuild: list[str] | None = None) -> list[StepReport]:
        """Every step once, under the pipeline's claims and lock, then the
        maintenance that is due (:func:`splice.runtime.runner.run_pipeline`)."""
        return run_pipeline(self.plan, self.io, on_step, parallel=parallel, wait=wait,
                            maintenance=maintenance, rebuild=rebuild)

    def run_steps(self, on_step: OnStep | None = None, parallel: int = 4,
                  only: set[str] | None = None) -> list[StepReport]:
        """The steps ``only`` names (None: all) once, each after those it
        reads; the caller holds the lock (:meth:`hold`)."""
        return run_steps(self.plan, self.io, on_step, parallel, only=only)

    def drop_steps(self, step_ids: list[str]) -> None:
        """Drop the checkpoints and tables of ``step_ids`` (a closed set:
        ``splice.engine.definitions.rebuild_targets``), to be recomputed from
        their sources by the next run; the caller holds the lock."""
        definitions.drop(self.plan, self.io, step_ids)

    def run_step(self, step_id: str, checked: bool = False) -> StepReport:
        """One step once; the caller holds the lock."""
        return run_step(self.plan.step(step_id), self.io, checked)

    def hold(self, wait: float | None = None, owner: str | None = None) -> Any:
        """The pipeline's claims and lock, for a block (runtime/tenure.hold)."""
        return hold(self.plan, self.warehouse, wait=wait, owner=owner)

    def serve(self, stop: threading.Event, on_report: Callable[[list[str]], None] | None = None,
              options: ServeOptions | None = None, on_started: Callable[[], None] | None = None,
              wait: float | None = 0) -> list[ServedStep]:
        """Every step as a long-running query until ``stop`` is set
        (:func:`splice.runtime.serve.serve`)."""
        return serve(self.plan, self.io, stop, on_report=on_report, options=options,
                     on_started=on_started, wait=wait)

    def maintain(self, policy: MaintenancePolicy | None = None, wait: float | None = 0,
                 owner: str | None = None) -> list[TableMaintenance]:
        """Compact and vacuum the pipeline's own tables now, under its lock,
        the steps caught up in between (runtime/maintenance.py)."""
        policy = policy or MaintenancePolicy.from_env()
        with self.hold(wait=wait, owner=owner):
            return maintain(self.io, policy, self.run_steps)

    # -- reading ------------------------------------------------------------

    def step_of(self, name: str) -> Step | None:
        """The step an output, a source or a step id names; None if none."""
        return step_named(self.plan, name)

    def table_path(self, name: str) -> str:
        step = self.step_of(name)
        if step is None:
            raise KeyError(f"pipeline '{self.name}' has no output, source or step '{name}'")
        return self.io.table_path(step)

    def table(self, name: str) -> DataFrame:
        """What the step ``name`` (an output, a source, a step id) has
        stored, as a batch DataFrame: a stream's rows so far, a table's
        current rows."""
        return self.spark.read.format("delta").load(self.table_path(name))

    def has_table(self, name: str) -> bool:
        return delta_exists(self.spark, self.table_path(name))

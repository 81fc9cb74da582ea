"""Everything orchestration/ takes from engine/, runtime/ and resources/.

The Dagster modules import these names from here only, so that moving them
inside engine/ (or resources/, splice/) changes this one file and nothing
else under orchestration/.
"""

from splice.engine.claims import ClaimRefused
from splice.engine.definitions import DefinitionChanged, definition_hash
from splice.engine.io import StepIO, table_rows
from splice.engine.lock import LockBusy, dagster_lock_wait
from splice.engine.maintenance import MaintenanceFailed, MaintenancePolicy, maintain
from splice.engine.settings import SettingsError
from splice.engine.source_state import SourceStateUnreadable, source_marker, table_version
from splice.resources.spark import SparkResource
from splice.resources.warehouse import WarehouseResource
from splice.runtime.compile import compile_path, discover, pipeline_paths
from splice.runtime.explain import explain_step, explainable, step_header
from splice.runtime.planner import planned
from splice.runtime.runner import StepFailed, StepReport, run_step, run_steps
from splice.runtime.tenure import TenureLost, hold

__all__ = [
    "ClaimRefused",
    "DefinitionChanged",
    "LockBusy",
    "MaintenanceFailed",
    "MaintenancePolicy",
    "SettingsError",
    "SourceStateUnreadable",
    "SparkResource",
    "StepFailed",
    "StepIO",
    "StepReport",
    "TenureLost",
    "WarehouseResource",
    "compile_path",
    "dagster_lock_wait",
    "definition_hash",
    "discover",
    "explain_step",
    "explainable",
    "hold",
    "maintain",
    "pipeline_paths",
    "planned",
    "run_step",
    "run_steps",
    "source_marker",
    "step_header",
    "table_rows",
    "table_version",
]

"""Everything orchestration/ takes from engine/, runtime/ and resources/.

The Dagster modules import these names from here only, so that moving them
inside engine/ (or resources/, splice/) changes this one file and nothing
else under orchestration/.
"""

from engine.claims import ClaimRefused
from engine.definitions import DefinitionChanged, definition_hash
from engine.io import StepIO, table_rows
from engine.lock import LockBusy, dagster_lock_wait
from engine.maintenance import MaintenanceFailed, MaintenancePolicy, maintain
from engine.settings import SettingsError
from engine.source_state import SourceStateUnreadable, source_marker, table_version
from resources.spark import SparkResource
from resources.warehouse import WarehouseResource
from runtime.compile import compile_path, discover, pipeline_paths
from runtime.explain import explain_step, explainable, step_header
from runtime.planner import planned
from runtime.runner import StepFailed, StepReport, run_step, run_steps
from runtime.tenure import TenureLost, hold

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

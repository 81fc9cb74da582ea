"""Everything orchestration/ takes from engine/, runtime/ and resources/.

The Dagster modules import these names from here only, so that moving them
inside engine/ (or resources/, splice/) changes this one file and nothing
else under orchestration/.
"""

from splice.engine.definitions import DefinitionChanged, definition_hash, rebuild_targets
from splice.engine.io import table_rows
from splice.engine.settings import SettingsError
from splice.engine.source_state import SourceStateUnreadable, source_marker, table_version
from splice.physical.base import PhysicalPlan
from splice.physical.explain import explain_step, explainable, step_header
from splice.resources.spark import SparkResource
from splice.resources.warehouse import WarehouseResource
from splice.runtime.claims import ClaimRefused
from splice.runtime.compile import compile_path, discover, pipeline_paths
from splice.runtime.lock import LockBusy, dagster_lock_wait
from splice.runtime.maintenance import MaintenanceFailed, MaintenancePolicy
from splice.runtime.runner import StepFailed, StepReport
from splice.runtime.tenure import TenureLost
from splice.runtime.workspace import Workspace, plan_packages

__all__ = [
    "ClaimRefused",
    "DefinitionChanged",
    "LockBusy",
    "MaintenanceFailed",
    "MaintenancePolicy",
    "PhysicalPlan",
    "SettingsError",
    "SourceStateUnreadable",
    "SparkResource",
    "StepFailed",
    "StepReport",
    "TenureLost",
    "WarehouseResource",
    "Workspace",
    "compile_path",
    "dagster_lock_wait",
    "definition_hash",
    "discover",
    "explain_step",
    "explainable",
    "pipeline_paths",
    "plan_packages",
    "rebuild_targets",
    "source_marker",
    "step_header",
    "table_rows",
    "table_version",
]

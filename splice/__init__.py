"""Splice: streaming SQL joins for the lakehouse.

Joins written in the SQL of Lenses, ksqlDB, SQLstream or RisingWave, compiled
into PySpark Structured Streaming steps that write Delta tables, each step a
Dagster asset::

    import splice

    plan = splice.compile_path("pipelines/demo")   # raises splice.SqlErrors
    print(splice.explain_pipeline(plan))            # steps, keys, strategies

    ws = splice.Workspace(plan)                     # settings from SPLICE_*, splice.yaml
    ws.run()                                        # every step once, incrementally
    ws.table("orders_enriched").show()              # an output's rows

    # a Dagster code location (workspace.yaml names the module)
    defs = splice.splice_definitions("pipelines", translator=splice.SpliceTranslator())

Everything named here is the public face; the subpackages (``splice.sql``,
``splice.joins``, ``splice.engine``, ...) are internal. The names load on first
use, so that ``import splice`` starts neither Spark nor Dagster.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from splice.engine.settings import SettingsError, SpliceSettings
    from splice.orchestration.factory import splice_assets, splice_definitions
    from splice.orchestration.translator import SpliceTranslator
    from splice.physical.explain import explain_pipeline
    from splice.runtime.claims import ClaimRefused
    from splice.runtime.compile import compile_path, compile_text
    from splice.runtime.runner import StepFailed
    from splice.runtime.tenure import TenureLost
    from splice.runtime.workspace import Workspace
    from splice.sql.errors import SqlError, SqlErrors

# name -> the module that defines it
_PUBLIC = {
    "compile_path": "splice.runtime.compile",
    "compile_text": "splice.runtime.compile",
    "explain_pipeline": "splice.physical.explain",
    "splice_definitions": "splice.orchestration.factory",
    "splice_assets": "splice.orchestration.factory",
    "SpliceTranslator": "splice.orchestration.translator",
    "SpliceSettings": "splice.engine.settings",
    "SqlError": "splice.sql.errors",
    "SqlErrors": "splice.sql.errors",
    "SettingsError": "splice.engine.settings",
    "StepFailed": "splice.runtime.runner",
    "ClaimRefused": "splice.runtime.claims",
    "TenureLost": "splice.runtime.tenure",
    "Workspace": "splice.runtime.workspace",
}

__all__ = [
    "ClaimRefused",
    "SettingsError",
    "SpliceSettings",
    "SpliceTranslator",
    "SqlError",
    "SqlErrors",
    "StepFailed",
    "TenureLost",
    "Workspace",
    "compile_path",
    "compile_text",
    "explain_pipeline",
    "splice_assets",
    "splice_definitions",
]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'splice' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

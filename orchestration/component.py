"""Splice as a Dagster Component: a folder of pipelines loaded from YAML.

The counterpart of dagster-dbt's ``DbtProjectComponent``. ``dg scaffold defs
splice.orchestration.component.SpliceComponent <folder>`` writes a
``defs.yaml`` (and a pipelines folder with one example pipeline); ``dg check
defs`` and ``dg list defs`` then load it like any component (Splice's entry
point registers it with ``dg``)::

    type: splice.orchestration.component.SpliceComponent
    attributes:
      pipelines: pipelines          # relative to this folder
      warehouse: s3a://lake/wh      # default: SPLICE_WAREHOUSE / splice.yaml
      translation:
        key_prefix: [lake]
        group_name: streaming
        owners: [team:data]
        tags: {tier: gold}

``build_defs`` is :func:`~orchestration.factory.splice_definitions` on that
folder: the same assets, checks, jobs, sensors and schedules as
``orchestration/definitions.py``. ``translator`` names a
:class:`~orchestration.translator.SpliceTranslator` subclass
(``package.module:ClassName``) for what YAML cannot say; ``translation``
applies on top of it.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dagster import AssetKey, Definitions
from dagster.components import (
    Component,
    ComponentLoadContext,
    Model,
    Resolvable,
    Scaffolder,
    ScaffoldRequest,
    scaffold_with,
)
from pydantic import Field
from splice.orchestration.bridge import SparkResource, WarehouseResource
from splice.orchestration.factory import splice_definitions
from splice.orchestration.translator import SpliceTranslator
from splice.sql.plan import Pipeline, Step

EXAMPLE_SQL = """\
-- An example pipeline: each order joined to its customer. Replace it with your own.
CREATE STREAM customers (id INT, name STRING) WITH (location='customers', key='id');
CREATE STREAM orders (id INT, customer_id INT, item STRING) WITH (location='orders', key='id');
WITH customersTable AS (SELECT TABLE * FROM customers);
INSERT INTO orders_enriched
SELECT STREAM customersTable.name, orders.item
FROM orders LEFT JOIN customersTable ON customersTable.id = orders.customer_id;
"""


class SpliceTranslation(Model):
    """Translator settings YAML can give (each applies to every asset)."""

    key_prefix: list[str] = Field(default_factory=list,
                                  description="parts put before each asset key")
    group_name: str | None = Field(default=None,
                                   description="one group for every asset (default: the "
                                               "pipeline's name)")
    owners: list[str] = Field(default_factory=list,
                              description="owners of every asset (e-mails or team:<name>)")
    tags: dict[str, str] = Field(default_factory=dict, description="tags added to every asset")


def _translator_class(spec: str | None) -> type[SpliceTranslator]:
    """The class ``package.module:ClassName`` names (default SpliceTranslator)."""
    if not spec:
        return SpliceTranslator
    module, _, name = spec.partition(":")
    if not module or not name:
        raise ValueError(f"translator {spec!r}: write it as package.module:ClassName")
    found = getattr(importlib.import_module(module), name, None)
    if not (isinstance(found, type) and issubclass(found, SpliceTranslator)):
        raise ValueError(f"translator {spec!r} is not a subclass of SpliceTranslator")
    return found


def configured_translator(base: type[SpliceTranslator],
                          settings: SpliceTranslation | None) -> SpliceTranslator:
    """An instance of ``base`` with ``settings`` applied over its answers."""
    if settings is None:
        return base()
    s = settings

    class Configured(base):  # type: ignore[misc, valid-type]
        def get_asset_key(self, step: Step, pipeline: Pipeline) -> AssetKey:
            return AssetKey([*s.key_prefix, *super().get_asset_key(step, pipeline).path])

        def get_group_name(self, step: Step, pipeline: Pipeline) -> str | None:
            return s.group_name or super().get_group_name(step, pipeline)

        def get_owners(self, step: Step, pipeline: Pipeline) -> Sequence[str]:
            return [*super().get_owners(step, pipeline), *s.owners]

        def get_tags(self, step: Step, pipeline: Pipeline) -> Mapping[str, str]:
            return {**super().get_tags(step, pipeline), **s.tags}

        def get_sql_errors_key(self, pipeline_name: str) -> AssetKey:
            return AssetKey([*s.key_prefix, *super().get_sql_errors_key(pipeline_name).path])

        def get_sql_errors_group_name(self, pipeline_name: str) -> str | None:
            return s.group_name or super().get_sql_errors_group_name(pipeline_name)

        def get_sql_errors_owners(self, pipeline_name: str) -> Sequence[str]:
            return [*super().get_sql_errors_owners(pipeline_name), *s.owners]

    Configured.__name__ = f"Configured{base.__name__}"
    return Configured()


class SpliceScaffolder(Scaffolder):
    """``dg scaffold defs ...SpliceComponent <folder>``: a defs.yaml and
    a pipelines folder holding one example pipeline."""

    def scaffold(self, request: ScaffoldRequest) -> None:
        folder = Path(request.target_path)
        folder.mkdir(parents=True, exist_ok=True)
        example = folder / "pipelines" / "example"
        example.mkdir(parents=True, exist_ok=True)
        (example / "pipeline.sql").write_text(EXAMPLE_SQL)
        (folder / "defs.yaml").write_text(
            f"type: {request.type_name}\n\nattributes:\n  pipelines: pipelines\n")


@scaffold_with(SpliceScaffolder)
class SpliceComponent(Component, Model, Resolvable):
    """Splice's pipelines in a folder, as Dagster definitions."""

    pipelines: str = Field(default="pipelines",
                           description="a pipeline folder, or a folder of them (relative to "
                                       "the component's folder, or absolute)")
    warehouse: str | None = Field(default=None,
                                  description="the warehouse folder or URI (default: "
                                              "SPLICE_WAREHOUSE, else splice.yaml's)")
    spark_master: str | None = Field(default=None,
                                     description="Spark master URL (default "
                                                 "SPLICE_SPARK_MASTER, else local[2])")
    hide_internal_steps: bool = Field(default=False,
                                      description="show sources and outputs only")
    translator: str | None = Field(default=None,
                                   description="a SpliceTranslator subclass, as "
                                               "package.module:ClassName")
    translation: SpliceTranslation | None = Field(default=None,
                                                  description="translator settings")

    def pipelines_path(self, context: ComponentLoadContext) -> Path:
        path = Path(self.pipelines)
        return path if path.is_absolute() else context.path / path

    def build_defs(self, context: ComponentLoadContext) -> Definitions:
        warehouse = (WarehouseResource(root=self.warehouse) if self.warehouse
                     else WarehouseResource.from_settings())
        spark: Any = SparkResource(master=self.spark_master)
        return splice_definitions(
            self.pipelines_path(context),
            translator=configured_translator(_translator_class(self.translator),
                                             self.translation),
            hide_internal_steps=self.hide_internal_steps, warehouse=warehouse, spark=spark)

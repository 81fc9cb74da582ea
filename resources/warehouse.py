"""The warehouse as a Dagster resource. The layout (where sources, steps,
outputs, checkpoints and claims live) is engine/settings.py's
:class:`Warehouse`; this resource *is* one (it inherits the path methods), so
it can be handed to engine code wherever a ``Warehouse`` is expected."""

from __future__ import annotations

from dagster import ConfigurableResource
from pydantic import Field
from splice.engine.settings import DEFAULT_ROOT, SpliceSettings, Warehouse

__all__ = ["DEFAULT_ROOT", "WarehouseResource"]


class WarehouseResource(Warehouse, ConfigurableResource):
    root: str = Field(default=DEFAULT_ROOT, description="the warehouse folder or URI")

    @classmethod
    def from_settings(cls, settings: SpliceSettings | None = None,
                      default: str | None = None) -> WarehouseResource:
        """The warehouse of ``settings`` (default: the environment's and the
        settings file's, as the CLI reads them); ``default`` when neither
        names one."""
        settings = settings or SpliceSettings.from_env()
        given = "warehouse" in settings.model_fields_set
        return cls(root=settings.warehouse if given or default is None else default)

    def layout(self) -> Warehouse:
        """The plain engine object, without Dagster's resource machinery."""
        return Warehouse(root=self.root)

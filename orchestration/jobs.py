"""A job per pipeline: every step, upstream first."""

from dagster import AssetSelection, define_asset_job
from dagster._core.definitions.unresolved_asset_job_definition import (
    UnresolvedAssetJobDefinition,
)

from sql.plan import Pipeline


def pipeline_job(pipeline: Pipeline) -> UnresolvedAssetJobDefinition:
    return define_asset_job(
        name=f"{pipeline.name}_job",
        selection=AssetSelection.groups(pipeline.name),
        description=f"Run every step of pipeline '{pipeline.name}' once, incrementally.",
    )

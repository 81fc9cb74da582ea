"""A job per pipeline: every asset of the pipeline, upstream first.

The job selects the pipeline's assets by key, not by group: a translator
may put them in other groups, or several pipelines in one. Sensors and
schedules name the job (public Dagster API only: the job object
``define_asset_job`` returns has no public type).
"""

from collections.abc import Sequence

from dagster import AssetsDefinition, AssetSelection, define_asset_job
from splice.sql.plan import Pipeline


def job_name(pipeline: Pipeline) -> str:
    return f"{pipeline.name}_job"


def pipeline_job(pipeline: Pipeline, assets: Sequence[AssetsDefinition]):
    """The job; its type (what define_asset_job returns) is not public. It
    observes the sources' data first (their observable assets), then runs
    the steps."""
    return define_asset_job(
        name=job_name(pipeline),
        selection=AssetSelection.assets(*assets),
        description=f"Run every step of pipeline '{pipeline.name}' once, incrementally.",
    )

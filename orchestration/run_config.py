"""The run config of a pipeline's op: what ``splice run`` takes as flags,
launched from Dagster.

``rebuild`` is ``splice run --rebuild`` (dbt's ``--full-refresh`` is a run
config in dagster-dbt the same way): the steps it names and every step
downstream of them are dropped, under the pipeline's lock, then recomputed
from their sources by the same run. The launchpad shows it as a form on the
pipeline's op (``<pipeline>_steps``).
"""

from __future__ import annotations

from dagster import Config
from pydantic import Field
from splice.orchestration.bridge import rebuild_targets
from splice.sql.plan import Pipeline


class RebuildRefused(Exception):
    """A rebuild this run cannot do; the message says what to select."""


class SpliceRunConfig(Config):
    rebuild: list[str] = Field(
        default_factory=list,
        description="Steps to rebuild from their sources, as `splice run --rebuild` "
                    "takes them: step ids (each with every step downstream of it), or "
                    "[all]. Their checkpoints and tables are dropped first, under the "
                    "pipeline's lock; the run then recomputes them.")


def steps_to_drop(pipeline: Pipeline, config: SpliceRunConfig, running: set[str]) -> list[str]:
    """The steps the run's ``rebuild`` drops (none without one), refused as
    ``--rebuild`` refuses a name that is no step, and when a dropped step
    is not one this run recomputes: its table would stay empty until a
    later run."""
    if not config.rebuild:
        return []
    try:
        dropped = rebuild_targets(pipeline, config.rebuild, named_by="the run config's rebuild")
    except KeyError as err:
        raise RebuildRefused(str(err.args[0])) from None
    missing = [i for i in dropped if i not in running]
    if missing:
        raise RebuildRefused(
            f"rebuilding {', '.join(config.rebuild)} drops {', '.join(missing)}, which this "
            "run does not materialize: select their assets too (or the whole pipeline), so "
            "that the run that drops a table recomputes it")
    return dropped

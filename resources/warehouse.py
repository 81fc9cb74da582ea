"""The warehouse: where sources, steps, outputs and checkpoints live.

Layout under ``root`` (a folder, or any URI Spark can write):

- ``<location>``: a source's data, when its location is relative;
- ``<output>``: each output table, by the name the statement gave it;
- ``_splice/<pipeline>/steps/<step>``: intermediate step tables;
- ``_splice/<pipeline>/checkpoints/<step>``: each step's streaming checkpoint;
- ``_splice/<pipeline>/dead_letter/<source>``: records a source could not read;
- ``_splice/<pipeline>/owner.json``: which SQL folder or file owns the
  pipeline name (engine/claims.py);
- ``_splice/output-claims/<output>.json``: which pipeline writes each output
  (``-`` is never in a pipeline name, so no pipeline folder can be this one).
- ``_splice/<pipeline>/run.lock`` (or ``run.lease/`` on a URI): who runs the
  pipeline now; ``_splice/<pipeline>/maintenance.json``: runs since the last
  maintenance.
"""

from __future__ import annotations

import os

from dagster import ConfigurableResource
from pydantic import Field

DEFAULT_ROOT = "warehouse"


def _has_scheme(location: str) -> bool:
    return "://" in location or location.startswith("file:")


class WarehouseResource(ConfigurableResource):
    root: str = Field(default=DEFAULT_ROOT, description="the warehouse folder or URI")

    def _join(self, *parts: str) -> str:
        root = self.root if _has_scheme(self.root) else os.path.abspath(self.root)
        return "/".join([root.rstrip("/"), *parts])

    def source_path(self, location: str) -> str:
        return location if _has_scheme(location) else self._join(location)

    def output_path(self, name: str) -> str:
        return self._join(name)

    def pipeline_path(self, pipeline: str) -> str:
        return self._join("_splice", pipeline)

    def step_path(self, pipeline: str, step_id: str) -> str:
        return self._join("_splice", pipeline, "steps", step_id)

    def checkpoint_path(self, pipeline: str, step_id: str) -> str:
        return self._join("_splice", pipeline, "checkpoints", step_id)

    def dead_letter_path(self, pipeline: str, source: str) -> str:
        return self._join("_splice", pipeline, "dead_letter", source)

    def owner_path(self, pipeline: str) -> str:
        return self._join("_splice", pipeline, "owner.json")

    def output_claim_path(self, output: str) -> str:
        return self._join("_splice", "output-claims", f"{output.lower()}.json")

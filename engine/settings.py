"""Splice's settings and the warehouse's path layout: plain pydantic models,
no Dagster. The CLI builds them from its flags and the environment; the
Dagster resources (resources/spark.py, resources/warehouse.py) wrap them.

Precedence, for every setting: an explicit value (a CLI flag, a resource's
field, a keyword argument of :meth:`SpliceSettings.from_env`) wins over the
environment variable, which wins over the default. The two collections
merge instead of replacing: ``conf`` key by key (the explicit value wins for
a key both name), ``packages`` as a union (environment's first). Delta's own
Maven coordinate is always added by engine/session.py, never replaced.

==========================  =====================  ==============================
setting                     environment variable   default
==========================  =====================  ==============================
``warehouse``               SPLICE_WAREHOUSE       ``warehouse`` (a folder, or URI)
``master``                  SPLICE_SPARK_MASTER    ``local[2]``
``connect_url``             SPLICE_SPARK_CONNECT   none (``sc://host:15002``)
``driver_memory``           SPLICE_DRIVER_MEMORY   ``4g``
``shuffle_partitions``      SPLICE_SHUFFLE_PARTITIONS  ``2``
``packages``                SPLICE_SPARK_PACKAGES  none (comma-separated)
``conf``                    SPLICE_SPARK_CONF      none (a JSON object)
``spark_log``               SPLICE_SPARK_LOG       ``<temp dir>/splice-spark.log``
``kafka_bootstrap``         SPLICE_KAFKA_BOOTSTRAP none (``host:port,...``)
==========================  =====================  ==============================

``kafka_bootstrap`` is the Kafka brokers a source on a topic reads when its
statement names none (its own ``properties.bootstrap.server`` /
``bootstrap`` wins).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_ROOT = "warehouse"
DEFAULT_MASTER = "local[2]"

# setting -> environment variable
ENV = {
    "warehouse": "SPLICE_WAREHOUSE",
    "master": "SPLICE_SPARK_MASTER",
    "connect_url": "SPLICE_SPARK_CONNECT",
    "driver_memory": "SPLICE_DRIVER_MEMORY",
    "shuffle_partitions": "SPLICE_SHUFFLE_PARTITIONS",
    "packages": "SPLICE_SPARK_PACKAGES",
    "conf": "SPLICE_SPARK_CONF",
    "spark_log": "SPLICE_SPARK_LOG",
    "kafka_bootstrap": "SPLICE_KAFKA_BOOTSTRAP",
}


class SettingsError(ValueError):
    """A setting's value cannot be used; the message names the variable and
    the fix."""


def _has_scheme(location: str) -> bool:
    return "://" in location or location.startswith("file:")


class Warehouse(BaseModel):
    """Where sources, steps, outputs and checkpoints live.

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

    A relative folder is made absolute against the current directory when a
    path is asked for.
    """

    model_config = ConfigDict(frozen=True)

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


class SpliceSettings(BaseModel):
    """Everything a Splice process needs to start Spark and find its
    warehouse (the module docstring has the names and the precedence)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    warehouse: str = DEFAULT_ROOT
    master: str = DEFAULT_MASTER
    connect_url: str | None = Field(
        default=None, description="a Spark Connect URL (sc://host:port); when set, "
                                  "Splice connects to that server and ignores master")
    driver_memory: str = "4g"
    # Streaming state is partitioned by this, and it cannot change once a
    # checkpoint exists.
    shuffle_partitions: int = Field(default=2, ge=1)
    app_name: str = "splice"
    packages: tuple[str, ...] = Field(
        default=(), description="Maven coordinates added to Delta's (never replacing it)")
    conf: dict[str, str] = Field(default_factory=dict, description="extra Spark settings")
    spark_log: str = Field(
        default_factory=lambda: os.path.join(tempfile.gettempdir(), "splice-spark.log"),
        description="where the JVM's own console output goes")
    kafka_bootstrap: str | None = Field(
        default=None, description="Kafka brokers (host:port,...) of topic sources whose "
                                  "statement names none")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None,
                 **explicit: Any) -> SpliceSettings:
        """The settings: ``explicit`` values (None means "not given") over the
        ``SPLICE_*`` environment variables over the defaults."""
        env = os.environ if environ is None else environ
        unknown = set(explicit) - set(cls.model_fields)
        if unknown:
            raise TypeError(f"unknown settings: {', '.join(sorted(unknown))}")
        values: dict[str, Any] = {}
        for name in ("warehouse", "master", "connect_url", "driver_memory", "spark_log",
                     "kafka_bootstrap"):
            text = env.get(ENV[name], "").strip()
            if text:
                values[name] = text
        partitions = env.get(ENV["shuffle_partitions"], "").strip()
        if partitions:
            values["shuffle_partitions"] = _positive_int(ENV["shuffle_partitions"], partitions)
        given = {k: v for k, v in explicit.items() if v is not None}
        conf = {**parse_conf(env.get(ENV["conf"], "")), **dict(given.pop("conf", {}))}
        packages = [*parse_packages(env.get(ENV["packages"], "")),
                    *given.pop("packages", ())]
        # A spark.jars.packages in conf would replace Delta's coordinate:
        # its coordinates join the packages instead.
        packages += parse_packages(conf.pop("spark.jars.packages", ""))
        values.update(given)
        return cls(**values, conf=conf, packages=tuple(dict.fromkeys(packages)))

    def with_packages(self, packages: tuple[str, ...]) -> SpliceSettings:
        """These settings with ``packages`` joined to theirs (a pipeline's
        readers, such as Spark's Kafka connector, ask for theirs)."""
        merged = tuple(dict.fromkeys([*self.packages, *packages]))
        return self if merged == self.packages else self.model_copy(update={"packages": merged})

    def warehouse_layout(self) -> Warehouse:
        return Warehouse(root=self.warehouse)

    def describe_spark(self) -> str:
        """What the CLI prints when it starts Spark."""
        return f"Spark Connect {self.connect_url}" if self.connect_url else self.master


def _positive_int(variable: str, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise SettingsError(f"{variable} must be a whole number above 0, not {text!r}")
    return value


def parse_conf(text: str) -> dict[str, str]:
    """``SPLICE_SPARK_CONF``: a JSON object of Spark setting names to values
    (``{"spark.sql.shuffle.partitions": "4"}``); empty text is no settings."""
    text = text.strip()
    if not text:
        return {}
    try:
        values = json.loads(text)
    except ValueError as err:
        raise SettingsError(f"{ENV['conf']} is not a JSON object: {err}; write it as "
                            '{"spark.setting": "value", ...}') from None
    if not isinstance(values, dict):
        raise SettingsError(f"{ENV['conf']} must be a JSON object of setting: value, "
                            f"not {type(values).__name__}")
    return {str(k): str(v) for k, v in values.items()}


def parse_packages(text: str) -> list[str]:
    """Comma-separated Maven coordinates (``group:artifact:version``)."""
    found = [p.strip() for p in text.split(",") if p.strip()]
    for coordinate in found:
        if coordinate.count(":") != 2:
            raise SettingsError(f"{ENV['packages']}: {coordinate!r} is not a Maven coordinate "
                                "group:artifact:version")
    return found

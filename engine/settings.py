"""Splice's settings and the warehouse's path layout: plain pydantic models,
no Dagster. The CLI builds them from its flags and the environment; the
Dagster resources (resources/spark.py, resources/warehouse.py) wrap them.

Precedence, for every setting: an explicit value (a CLI flag, a resource's
field, a keyword argument of :meth:`SpliceSettings.from_env`) wins over the
environment variable, which wins over the project's settings file, which
wins over the default. The two collections merge instead of replacing:
``conf`` key by key (the higher one wins for a key both name), ``packages``
as a union (the settings file's first, then the environment's).

The settings file is ``splice.yaml`` in the current directory (or the
folder given as ``project_dir``): a mapping of the setting names below to
values (``packages`` a list, ``conf`` a mapping). Without a splice.yaml, a
``[tool.splice]`` table in the same folder's pyproject.toml is read the same
way. An unknown name in it is an error that names it. Delta's own
Maven coordinate is always added by engine/session.py, never replaced.

==========================  =====================  ==============================
setting                     environment variable   default
==========================  =====================  ==============================
``warehouse``               SPLICE_WAREHOUSE       ``warehouse`` (a folder, or URI)
``master``                  SPLICE_SPARK_MASTER    ``local[2]``
``connect_url``             SPLICE_SPARK_REMOTE    none (``sc://host:15002``)
``driver_memory``           SPLICE_DRIVER_MEMORY   ``4g``
``shuffle_partitions``      SPLICE_SHUFFLE_PARTITIONS  ``2``
``packages``                SPLICE_SPARK_PACKAGES  none (comma-separated)
``conf``                    SPLICE_SPARK_CONF      none (a JSON object)
``spark_log``               SPLICE_SPARK_LOG       ``<temp dir>/splice-spark.log``
``kafka_bootstrap``         SPLICE_KAFKA_BOOTSTRAP none (``host:port,...``)
``s3_endpoint``             SPLICE_S3_ENDPOINT     none (AWS); an S3 server's URL
``kafka_lost_records``      SPLICE_KAFKA_LOST_RECORDS  ``fail`` (or ``skip``)
``schema_registry_url``     SPLICE_SCHEMA_REGISTRY_URL  none (``http://host:port/...``)
``schema_registry``         SPLICE_SCHEMA_REGISTRY_CONF  none (a JSON object)
``processing_guarantee``    SPLICE_PROCESSING_GUARANTEE  ``exactly_once_v2``
==========================  =====================  ==============================

``kafka_bootstrap`` is the Kafka brokers a source on a topic reads when its
statement names none (its own ``properties.bootstrap.server`` /
``bootstrap`` wins). ``kafka_lost_records`` is what a Kafka source does
when the broker deleted records before a run read them: ``fail`` stops
the run and names them; ``skip`` writes each deleted range to the
source's dead letter and reads on (operators/kafka_gaps.py).
``schema_registry_url`` is the schema registry's URL (Confluent's REST API;
for Apicurio's, its ``/apis/ccompat/v7`` path), and ``schema_registry``
its client's settings named as ksqlDB names them
(``ksql.schema.registry.basic.auth.user.info``, ...), merged key by key as
``conf`` is (engine/schema_registry.py maps them to confluent-kafka's).
``processing_guarantee`` is how a Kafka sink delivers, by ksqlDB's names:
``exactly_once_v2`` (each micro-batch in one Kafka transaction,
operators/kafka_transactions.py) or ``at_least_once`` (Spark's Kafka
writer; a replayed micro-batch may arrive twice).
``SPLICE_SPARK_CONNECT`` is read as ``SPLICE_SPARK_REMOTE`` when that is
not set (its earlier name).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from splice.engine.locations import canonical_location, has_scheme
from splice.engine.schema_registry import check_registry_conf, check_registry_url
from splice.engine.settings_error import SettingsError
from splice.engine.storage import s3a_conf

DEFAULT_ROOT = "warehouse"
DEFAULT_MASTER = "local[2]"

# setting -> environment variable
ENV = {
    "warehouse": "SPLICE_WAREHOUSE",
    "master": "SPLICE_SPARK_MASTER",
    "connect_url": "SPLICE_SPARK_REMOTE",
    "driver_memory": "SPLICE_DRIVER_MEMORY",
    "shuffle_partitions": "SPLICE_SHUFFLE_PARTITIONS",
    "packages": "SPLICE_SPARK_PACKAGES",
    "conf": "SPLICE_SPARK_CONF",
    "spark_log": "SPLICE_SPARK_LOG",
    "kafka_bootstrap": "SPLICE_KAFKA_BOOTSTRAP",
    "s3_endpoint": "SPLICE_S3_ENDPOINT",
    "kafka_lost_records": "SPLICE_KAFKA_LOST_RECORDS",
    "schema_registry_url": "SPLICE_SCHEMA_REGISTRY_URL",
    "schema_registry": "SPLICE_SCHEMA_REGISTRY_CONF",
    "processing_guarantee": "SPLICE_PROCESSING_GUARANTEE",
}
# What a Kafka source does with records its broker deleted unread.
LOST_RECORDS = ("fail", "skip")
# How a Kafka sink delivers, ksqlDB's processing.guarantee (its older
# name exactly_once reads as exactly_once_v2).
GUARANTEES = ("exactly_once_v2", "at_least_once")
SETTINGS_FILE = "splice.yaml"

# Splice's own settings of a Spark session (``spark.conf.set``, or the
# session's settings), read where they act: the table-table join plan
# (joins/table_plan.py) and where a new Delta stream starts
# (engine/stream_start.py). Each step runs in a session of its own
# (engine.session.own_session), which is given those of them that are set.
PLAN_SETTING = "splice.tableJoin.plan"
FRACTION_SETTING = "splice.tableJoin.recomputeFraction"
READ_FRACTION_SETTING = "splice.tableJoin.recomputeFractionWhenRead"
STREAM_START_SETTING = "splice.stream.startFromLog"
SESSION_SETTINGS = (PLAN_SETTING, FRACTION_SETTING, READ_FRACTION_SETTING, STREAM_START_SETTING)


def _has_scheme(location: str) -> bool:
    return has_scheme(location)


class Warehouse(BaseModel):
    """Where sources, steps, outputs and checkpoints live.

    Layout under ``root`` (a folder, or any URI Spark can write):

    - ``<location>``: a source's data, when its location is relative;
    - ``<output>``: each output table, by the name the statement gave it;
    - ``_splice/<pipeline>/steps/<step>``: intermediate step tables;
    - ``_splice/<pipeline>/checkpoints/<step>``: each step's streaming checkpoint;
    - ``_splice/<pipeline>/dead_letter/<source>``: records a source could not read;
    - ``_splice/<pipeline>/owner.json``: which SQL folder or file owns the
      pipeline name (runtime/claims.py);
    - ``_splice/output-claims/<output>.json``: which pipeline writes each output
      (``-`` is never in a pipeline name, so no pipeline folder can be this one).
    - ``_splice/<pipeline>/run.lock`` (or ``run.lease/`` on a URI): who runs the
      pipeline now; ``_splice/<pipeline>/maintenance.json``: runs since the last
      maintenance.

    Every path is made from the root's one spelling
    (:func:`splice.engine.locations.canonical_location`: a local folder's real
    absolute path, ``s3a://`` for S3), so that two spellings of one place
    name one lock, one set of claims and one set of checkpoints. A relative
    folder is made absolute against the current directory when a path is
    asked for.
    """

    model_config = ConfigDict(frozen=True)

    root: str = Field(default=DEFAULT_ROOT, description="the warehouse folder or URI")

    def _join(self, *parts: str) -> str:
        return "/".join([self.uri().rstrip("/"), *parts])

    def uri(self) -> str:
        """The root's one spelling (engine/locations.py)."""
        return canonical_location(self.root)

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
    s3_endpoint: str | None = Field(
        default=None, description="an S3-compatible server's URL: Spark's "
                                  "fs.s3a.endpoint (path-style) and fsspec's endpoint")
    kafka_lost_records: str = Field(
        default=LOST_RECORDS[0],
        description="records a Kafka broker deleted before a run read them: fail (stop the "
                    "run) or skip (to the dead letter)")
    schema_registry_url: str | None = Field(
        default=None, description="the schema registry's URL (Confluent's REST API)")
    schema_registry: dict[str, str] = Field(
        default_factory=dict, description="the registry client's settings, by ksqlDB's names "
                                          "(ksql.schema.registry.*)")
    processing_guarantee: str = Field(
        default=GUARANTEES[0],
        description="how a Kafka sink delivers: exactly_once_v2 (one Kafka transaction a "
                    "micro-batch) or at_least_once")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None,
                 project_dir: str | os.PathLike[str] | None = None,
                 **explicit: Any) -> SpliceSettings:
        """The settings: ``explicit`` values (None means "not given") over the
        ``SPLICE_*`` environment variables over the settings file of
        ``project_dir`` (default: the current directory) over the defaults."""
        env = os.environ if environ is None else environ
        unknown = set(explicit) - set(cls.model_fields)
        if unknown:
            raise TypeError(f"unknown settings: {', '.join(sorted(unknown))}")
        values = read_settings_file(project_dir)
        file_conf = values.pop("conf", {})
        file_packages = values.pop("packages", [])
        file_registry = values.pop("schema_registry", {})
        for name in ("warehouse", "master", "connect_url", "driver_memory", "spark_log",
                     "kafka_bootstrap", "s3_endpoint", "kafka_lost_records",
                     "schema_registry_url", "processing_guarantee"):
            text = env.get(ENV[name], "").strip()
            if text:
                values[name] = text
        if "connect_url" not in values and env.get("SPLICE_SPARK_CONNECT", "").strip():
            values["connect_url"] = env["SPLICE_SPARK_CONNECT"].strip()  # the older name
        partitions = env.get(ENV["shuffle_partitions"], "").strip()
        if partitions:
            values["shuffle_partitions"] = _positive_int(ENV["shuffle_partitions"], partitions)
        given = {k: v for k, v in explicit.items() if v is not None}
        conf = {**file_conf, **parse_conf(env.get(ENV["conf"], "")),
                **dict(given.pop("conf", {}))}
        registry = {**file_registry,
                    **check_registry_conf(parse_conf(env.get(ENV["schema_registry"], ""),
                                                     ENV["schema_registry"]),
                                          ENV["schema_registry"]),
                    **check_registry_conf(dict(given.pop("schema_registry", {})),
                                          "schema_registry")}
        packages = [*file_packages, *parse_packages(env.get(ENV["packages"], "")),
                    *given.pop("packages", ())]
        # A spark.jars.packages in conf would replace Delta's coordinate:
        # its coordinates join the packages instead.
        packages += parse_packages(conf.pop("spark.jars.packages", ""))
        values.update(given)
        if "driver_memory" in values:
            values["driver_memory"] = _memory_size(values["driver_memory"])
        if "kafka_lost_records" in values:
            values["kafka_lost_records"] = lost_records_policy(values["kafka_lost_records"])
        if "processing_guarantee" in values:
            values["processing_guarantee"] = guarantee(values["processing_guarantee"])
        if values.get("schema_registry_url"):
            values["schema_registry_url"] = check_registry_url(values["schema_registry_url"])
        return cls(**values, conf=conf, packages=tuple(dict.fromkeys(packages)),
                   schema_registry=registry)

    def with_packages(self, packages: tuple[str, ...]) -> SpliceSettings:
        """These settings with ``packages`` joined to theirs (a pipeline's
        readers, such as Spark's Kafka connector, ask for theirs)."""
        merged = tuple(dict.fromkeys([*self.packages, *packages]))
        return self if merged == self.packages else self.model_copy(update={"packages": merged})

    def storage_conf(self) -> dict[str, str]:
        """The Spark settings of the storage: ``s3_endpoint``'s shorthand,
        under ``conf`` (which wins)."""
        return {**s3a_conf(self.s3_endpoint), **self.conf}

    def warehouse_layout(self) -> Warehouse:
        return Warehouse(root=self.warehouse)

    def describe_spark(self) -> str:
        """What the CLI prints when it starts Spark."""
        return f"Spark Connect {self.connect_url}" if self.connect_url else self.master


def read_settings_file(project_dir: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The settings in ``project_dir``'s splice.yaml, else its pyproject.toml's
    ``[tool.splice]``, else none; ``packages`` a list, ``conf`` a dict."""
    folder = os.fspath(project_dir) if project_dir is not None else os.getcwd()
    path = os.path.join(folder, SETTINGS_FILE)
    if os.path.isfile(path):
        import yaml

        try:
            with open(path, encoding="utf-8") as fh:
                data = yaml.safe_load(fh) or {}
        except yaml.YAMLError as err:
            raise SettingsError(f"{path} is not valid YAML: {err}") from None
    else:
        path = os.path.join(folder, "pyproject.toml")
        if not os.path.isfile(path):
            return {}
        import tomllib

        with open(path, "rb") as fh:
            data = tomllib.load(fh).get("tool", {}).get("splice", {})
    if not isinstance(data, dict):
        raise SettingsError(f"{path} must be a mapping of setting: value")
    known = set(ENV) | {"app_name"}
    unknown = sorted(set(map(str, data)) - known)
    if unknown:
        raise SettingsError(f"{path}: unknown setting(s) {', '.join(unknown)}; the settings "
                            f"are {', '.join(sorted(known))}")
    values = {k: v for k, v in data.items() if v is not None}
    conf = values.get("conf", {})
    if not isinstance(conf, dict):
        raise SettingsError(f"{path}: conf must be a mapping of Spark setting: value")
    values["conf"] = {str(k): _conf_value(v) for k, v in conf.items()}
    registry = values.get("schema_registry", {})
    if not isinstance(registry, dict):
        raise SettingsError(f"{path}: schema_registry must be a mapping of "
                            "ksql.schema.registry.<setting>: value")
    values["schema_registry"] = check_registry_conf(
        {k: _conf_value(v) for k, v in registry.items()}, f"{path}: schema_registry")
    packages = values.get("packages", [])
    if isinstance(packages, str):
        packages = parse_packages(packages)
    values["packages"] = [str(p) for p in packages]
    if "shuffle_partitions" in values:
        values["shuffle_partitions"] = _positive_int(f"{path}: shuffle_partitions",
                                                     str(values["shuffle_partitions"]))
    kept = ("conf", "packages", "shuffle_partitions", "schema_registry")
    return {k: (v if k in kept else str(v))
            for k, v in values.items()}


def _conf_value(value: Any) -> str:
    """A Spark setting's text (YAML's true is Spark's "true")."""
    return str(value).lower() if isinstance(value, bool) else str(value)


_MEMORY = re.compile(r"[0-9]+(b|k|kb|m|mb|g|gb|t|tb|p|pb)?", re.IGNORECASE)


def _memory_size(text: str) -> str:
    """The driver's memory as Spark reads it (``4g``, ``512m``): anything
    else made the JVM exit before Spark started."""
    text = str(text).strip()
    if not _MEMORY.fullmatch(text):
        raise SettingsError(
            f"the driver memory ({ENV['driver_memory']}, or driver_memory in "
            f"{SETTINGS_FILE}) must be a size such as 4g or 512m, not {text!r}")
    return text


def lost_records_policy(text: str | None) -> str:
    """``kafka_lost_records`` checked: ``fail`` or ``skip`` (None or empty:
    SPLICE_KAFKA_LOST_RECORDS, else ``fail``)."""
    if text is None or not str(text).strip():
        text = os.environ.get(ENV["kafka_lost_records"], "").strip() or LOST_RECORDS[0]
    value = str(text).strip().lower()
    if value not in LOST_RECORDS:
        raise SettingsError(
            f"{ENV['kafka_lost_records']} (or kafka_lost_records in {SETTINGS_FILE}) must be "
            f"fail (stop a run that finds records the broker deleted unread) or skip (write "
            f"each deleted range to the dead letter and read on), not {text!r}")
    return value


def guarantee(text: str | None) -> str:
    """``processing_guarantee`` checked: ``exactly_once_v2`` or
    ``at_least_once`` (None or empty: SPLICE_PROCESSING_GUARANTEE, else
    ``exactly_once_v2``)."""
    if text is None or not str(text).strip():
        text = os.environ.get(ENV["processing_guarantee"], "").strip() or GUARANTEES[0]
    value = str(text).strip().lower()
    value = GUARANTEES[0] if value == "exactly_once" else value
    if value not in GUARANTEES:
        raise SettingsError(
            f"{ENV['processing_guarantee']} (or processing_guarantee in {SETTINGS_FILE}) must "
            f"be exactly_once_v2 (a Kafka sink writes each micro-batch in one transaction) or "
            f"at_least_once (a replayed micro-batch may be sent twice), not {text!r}")
    return value


def parse_number(text: str, kind: type[int] | type[float] = float, least: float = 0,
                 above: bool = False) -> Any:
    """``text`` as a number of ``kind`` (a finite one), at least ``least``
    (above it when ``above``); ValueError says why not, in words a message
    can quote. The settings, the maintenance variables and the CLI's flags
    all read their numbers through it."""
    whole = "a whole number" if kind is int else "a number"
    try:
        value = kind(str(text).strip())
    except ValueError:
        raise ValueError(f"{text!r} is not {whole}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"{text!r} is not {whole}")
    if value < least or (above and value == least):
        raise ValueError(f"{text} is {'not above' if above else 'less than'} {least:g}")
    return value


def _positive_int(variable: str, text: str) -> int:
    try:
        return parse_number(text, int, least=1)
    except ValueError:
        raise SettingsError(f"{variable} must be a whole number above 0, not {text!r}") from None


def parse_conf(text: str, variable: str = ENV["conf"]) -> dict[str, str]:
    """``SPLICE_SPARK_CONF`` (or ``variable``): a JSON object of setting
    names to values (``{"spark.sql.shuffle.partitions": "4"}``); empty text
    is no settings."""
    text = text.strip()
    if not text:
        return {}
    try:
        values = json.loads(text)
    except ValueError as err:
        example = "spark.setting" if variable == ENV["conf"] else "setting"
        raise SettingsError(f"{variable} is not a JSON object: {err}; write it as "
                            f'{{"{example}": "value", ...}}') from None
    if not isinstance(values, dict):
        raise SettingsError(f"{variable} must be a JSON object of setting: value, "
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

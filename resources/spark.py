"""The Spark session, with Delta configured, as a Dagster resource: a thin
wrapper of engine/settings.py and engine/session.py (the CLI uses those
directly, without Dagster).

A field left unset takes its ``SPLICE_*`` environment variable, else the
project's settings file (splice.yaml), else the default (engine/settings.py
has the table); a field that is set wins.
"""

from __future__ import annotations

from dagster import ConfigurableResource
from pydantic import Field
from splice.engine.session import start_session
from splice.engine.settings import SpliceSettings


class SparkResource(ConfigurableResource):
    """A SparkSession with Delta Lake. ``master`` is ``local[2]`` by default
    (the embedded default); point it at a cluster with ``spark://...`` or
    ``yarn``, or at a Spark Connect server with ``connect_url``, and the same
    pipeline runs there."""

    master: str | None = Field(default=None, description="Spark master URL "
                               "(default SPLICE_SPARK_MASTER, else local[2])")
    connect_url: str | None = Field(default=None, description="Spark Connect URL "
                                    "(default SPLICE_SPARK_REMOTE; none: not Connect)")
    app_name: str | None = Field(default=None)
    driver_memory: str | None = Field(default=None, description="default "
                                      "SPLICE_DRIVER_MEMORY, else 4g")
    shuffle_partitions: int | None = Field(default=None, description="partitions of "
                                           "join state (default SPLICE_SHUFFLE_PARTITIONS, else 2)")
    packages: list[str] = Field(default_factory=list, description="extra Maven coordinates, "
                                "added to Delta's and SPLICE_SPARK_PACKAGES'")
    conf: dict[str, str] = Field(default_factory=dict, description="extra Spark settings, "
                                 "over SPLICE_SPARK_CONF's")
    kafka_bootstrap: str | None = Field(default=None, description="Kafka brokers of topic "
                                        "sources whose statement names none (default "
                                        "SPLICE_KAFKA_BOOTSTRAP)")
    s3_endpoint: str | None = Field(default=None, description="an S3-compatible server's URL "
                                    "for s3a:// warehouses (default SPLICE_S3_ENDPOINT)")
    spark_log: str | None = Field(default=None, description="where the JVM's console output "
                                  "goes (default SPLICE_SPARK_LOG)")
    kafka_lost_records: str | None = Field(
        default=None, description="records a Kafka broker deleted before a run read them: "
                                  "fail or skip (default SPLICE_KAFKA_LOST_RECORDS, else fail)")
    schema_registry_url: str | None = Field(
        default=None, description="the schema registry's URL, Confluent's REST API (default "
                                  "SPLICE_SCHEMA_REGISTRY_URL)")
    schema_registry: dict[str, str] = Field(
        default_factory=dict, description="the registry client's settings by ksqlDB's names, "
                                          "ksql.schema.registry.* (over "
                                          "SPLICE_SCHEMA_REGISTRY_CONF's)")
    processing_guarantee: str | None = Field(
        default=None, description="how a Kafka sink delivers: exactly_once_v2 or "
                                  "at_least_once (default SPLICE_PROCESSING_GUARANTEE, else "
                                  "exactly_once_v2)")

    def settings(self) -> SpliceSettings:
        return SpliceSettings.from_env(
            master=self.master, connect_url=self.connect_url, app_name=self.app_name,
            driver_memory=self.driver_memory, shuffle_partitions=self.shuffle_partitions,
            packages=tuple(self.packages), conf=dict(self.conf),
            kafka_bootstrap=self.kafka_bootstrap, s3_endpoint=self.s3_endpoint,
            spark_log=self.spark_log, kafka_lost_records=self.kafka_lost_records,
            schema_registry_url=self.schema_registry_url,
            schema_registry=dict(self.schema_registry),
            processing_guarantee=self.processing_guarantee)

    def session(self, packages: tuple[str, ...] = ()):  # -> SparkSession (lazy: Spark is heavy)
        """The process's session; ``packages`` (a pipeline's connectors, such
        as Kafka's) join the settings' when it starts here."""
        return start_session(self.settings().with_packages(packages))

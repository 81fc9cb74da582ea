"""The Kafka setting and the connector's package (no Spark, no broker)."""

from __future__ import annotations

from engine.settings import SpliceSettings
from runtime.compile import compile_text
from splice.kafka_broker import _properties, format_args

KAFKA = "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"


def test_kafka_bootstrap_from_env_and_explicit() -> None:
    env = {"SPLICE_KAFKA_BOOTSTRAP": " h1:9092,h2:9092 "}
    assert SpliceSettings.from_env(env).kafka_bootstrap == "h1:9092,h2:9092"
    assert SpliceSettings.from_env(env, kafka_bootstrap="x:1").kafka_bootstrap == "x:1"
    assert SpliceSettings.from_env({}).kafka_bootstrap is None


def test_a_pipeline_with_a_kafka_source_asks_for_the_connector_merged_with_others() -> None:
    kafka = compile_text("CREATE STREAM s (id INT) WITH (format='kafka');\n"
                         "INSERT INTO o SELECT STREAM id FROM s;", "k.sql", "k")
    delta = compile_text("CREATE STREAM s (id INT);\nINSERT INTO o SELECT STREAM id FROM s;",
                         "d.sql", "d")
    assert kafka.packages() == (KAFKA,)
    assert delta.packages() == ()
    settings = SpliceSettings.from_env({"SPLICE_SPARK_PACKAGES": "a:b:1"})
    assert settings.with_packages(kafka.packages()).packages == ("a:b:1", KAFKA)
    assert settings.with_packages(delta.packages()) is settings
    assert settings.with_packages((KAFKA, "a:b:1")).packages == ("a:b:1", KAFKA)


def test_broker_properties_are_a_single_kraft_node_on_loopback(tmp_path) -> None:
    props = dict(line.split("=", 1) for line in _properties(tmp_path, 9092, 9093).splitlines())
    assert props["process.roles"] == "broker,controller"
    assert props["controller.quorum.voters"] == "1@127.0.0.1:9093"
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:9092"
    assert props["log.dirs"] == str(tmp_path / "data")
    assert props["offsets.topic.replication.factor"] == "1"


def test_a_cluster_id_is_given_as_one_word_whatever_it_begins_with(tmp_path) -> None:
    """One id in 64 begins with ``-``; as a separate argument StorageTool
    took it for an option and the broker never started (a CI run failed so)."""
    args = format_args("-Ab3_x", tmp_path / "server.properties")
    assert "--cluster-id=-Ab3_x" in args
    assert "-Ab3_x" not in args

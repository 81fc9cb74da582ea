"""The Kafka setting and the connector's package (no Spark, no broker)."""

from __future__ import annotations

import socket

import pytest
from splice.engine import kafka_topics
from splice.engine.io import StepIO
from splice.engine.settings import SettingsError, SpliceSettings, Warehouse, lost_records_policy
from splice.operators import kafka_source
from splice.operators.kafka_gaps import Gap, batch_range, lost_in_batch, resume_offsets
from splice.operators.kafka_source import bootstrap
from splice.operators.sources import SourceError
from splice.runtime.compile import compile_text

from splice.testing.kafka_broker import _properties, format_args

KAFKA = "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"


def test_kafka_bootstrap_from_env_and_explicit() -> None:
    env = {"SPLICE_KAFKA_BOOTSTRAP": " h1:9092,h2:9092 "}
    assert SpliceSettings.from_env(env).kafka_bootstrap == "h1:9092,h2:9092"
    assert SpliceSettings.from_env(env, kafka_bootstrap="x:1").kafka_bootstrap == "x:1"
    assert SpliceSettings.from_env({}).kafka_bootstrap is None


def test_kafka_lost_records_is_fail_or_skip_from_each_place(tmp_path, monkeypatch) -> None:
    assert SpliceSettings.from_env({}).kafka_lost_records == "fail"
    env = {"SPLICE_KAFKA_LOST_RECORDS": " Skip "}
    assert SpliceSettings.from_env(env).kafka_lost_records == "skip"
    assert SpliceSettings.from_env(env, kafka_lost_records="fail").kafka_lost_records == "fail"
    (tmp_path / "splice.yaml").write_text("kafka_lost_records: skip\n")
    assert SpliceSettings.from_env({}, project_dir=tmp_path).kafka_lost_records == "skip"
    with pytest.raises(SettingsError) as err:
        SpliceSettings.from_env({"SPLICE_KAFKA_LOST_RECORDS": "ignore"})
    assert str(err.value) == (
        "SPLICE_KAFKA_LOST_RECORDS (or kafka_lost_records in splice.yaml) must be fail (stop "
        "a run that finds records the broker deleted unread) or skip (write each deleted "
        "range to the dead letter and read on), not 'ignore'")
    # A StepIO without the setting (a test's, a library caller's) reads the environment.
    monkeypatch.delenv("SPLICE_KAFKA_LOST_RECORDS", raising=False)
    assert lost_records_policy(None) == "fail"
    monkeypatch.setenv("SPLICE_KAFKA_LOST_RECORDS", "skip")
    assert lost_records_policy(None) == "skip"


def test_a_micro_batch_lost_what_is_below_the_brokers_first_offset_and_unread() -> None:
    """From the batch's start up to the broker's first offset, the first
    record read and the batch's end, whichever comes first. Partition 0
    lost offsets 3 and 4; partition 1 nothing (the broker has all); 2 lost
    offsets 6 to 7 though the broker deleted up to 9 (8 was read before the
    deletion); 3 (new to the query, nothing read) its first 4 records."""
    start = {0: 3, 1: 10, 2: 6}
    end = {0: 9, 1: 12, 2: 12, 3: 4}
    firsts = {0: 5, 1: 4, 2: 9, 3: 7}
    first_read = {0: 5, 1: 10, 2: 8}
    assert lost_in_batch(start, end, firsts, first_read) == [Gap(0, 3, 5), Gap(2, 6, 8),
                                                             Gap(3, 0, 4)]
    assert lost_in_batch({0: 3}, {0: 3}, {0: 3}, {}) == []  # an empty batch
    assert Gap(1, 4, 5).reason().startswith("lost: 1 record(s) at offset 4 were deleted")


def test_where_a_query_reads_on_comes_from_its_offset_log(tmp_path) -> None:
    """Spark's offset log as this Spark writes it (the Kafka source's
    queries of tests/operators/test_kafka_lost.py read what it writes): a batch reads
    from the previous batch's end (the first: from the query's start,
    ``sources/0/0``, after a NUL and a version line) to its own; a query
    goes on from its last commit; before any micro-batch, from nowhere."""
    checkpoint = tmp_path / "cp"
    assert resume_offsets(None, str(checkpoint), "t") is None
    (checkpoint / "sources" / "0").mkdir(parents=True)
    (checkpoint / "sources" / "0" / "0").write_text('\0v1\n{"t":{"0":0,"1":2}}')
    (checkpoint / "offsets").mkdir()
    (checkpoint / "commits").mkdir()
    meta = '{"batchWatermarkMs":0,"batchTimestampMs":1,"conf":{}}'
    for batch, offsets in ((0, '{"t":{"0":4,"1":5}}'), (1, '{"t":{"0":9,"1":5}}')):
        (checkpoint / "offsets" / str(batch)).write_text(f"v1\n{meta}\n{offsets}")
        (checkpoint / "offsets" / f".{batch}.crc").write_text("x")
    assert batch_range(None, str(checkpoint), "t", 0) == ({0: 0, 1: 2}, {0: 4, 1: 5})
    assert batch_range(None, str(checkpoint), "t", 1) == ({0: 4, 1: 5}, {0: 9, 1: 5})
    assert resume_offsets(None, str(checkpoint), "t") == {0: 0, 1: 2}
    (checkpoint / "commits" / "0").write_text('v1\n{"nextBatchWatermarkMs":0}')
    assert resume_offsets(None, str(checkpoint), "t") == {0: 4, 1: 5}
    (checkpoint / "commits" / "1").write_text('v1\n{"nextBatchWatermarkMs":0}')
    assert resume_offsets(None, str(checkpoint), "t") == {0: 9, 1: 5}


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


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_brokers_that_do_not_answer_are_one_message_naming_the_setting(monkeypatch) -> None:
    """Before Spark's Kafka client waits minutes for them (3 min 43 s here,
    ending on "Timed out waiting for a node assignment"): the source, the
    brokers, why each did not answer and the setting to fix; one broker of
    several answering is enough; a port that accepts connections must
    answer Kafka's metadata request. No Spark, no broker."""
    sql = ("CREATE STREAM orders (id INT, item STRING) WITH (kafka_topic='orders', "
           "value_format='JSON');\nINSERT INTO result SELECT STREAM id, item FROM orders;\n")
    pipeline = compile_text(sql, "p.sql", "p")
    io = StepIO(spark=None, warehouse=Warehouse(root="wh"), pipeline=pipeline)
    step = io.pipeline.sources["orders"]
    dead = f"127.0.0.1:{_closed_port()}"
    monkeypatch.setenv("SPLICE_KAFKA_BOOTSTRAP", dead)
    with pytest.raises(SourceError) as err:
        bootstrap(step, io)
    assert str(err.value) == (
        f"source 'orders' (declared at p.sql:1:1) reads Kafka topic 'orders' at {dead}, but no "
        f"broker there accepts a connection ({dead}: Connection refused): start it (bash "
        "scripts/kafka.sh start prints its address) or fix SPLICE_KAFKA_BOOTSTRAP (Dagster: "
        "SparkResource's kafka_bootstrap)")
    own = compile_text(sql.replace("value_format='JSON'", f"value_format='JSON', "
                                   f"properties.bootstrap.server='PLAINTEXT://{dead}'"),
                       "p.sql", "p")
    with pytest.raises(SourceError) as err:
        bootstrap(own.sources["orders"], StepIO(spark=None, warehouse=io.warehouse, pipeline=own))
    assert f"at PLAINTEXT://{dead}, but" in str(err.value)
    assert str(err.value).endswith("or fix the statement's properties.bootstrap.server")
    # A port that accepts connections but is no Kafka broker: Spark's client
    # would wait as long; the run asks Kafka's own question first.
    # A run asks twice (its markers, its query): the second time it is told
    # the first answer at once, not after another second of silence.
    monkeypatch.setattr(kafka_source, "ANSWER_SECONDS", 1.0)
    asked: list[str] = []

    def unanswered_brokers(brokers: str, seconds: float) -> str | None:
        asked.append(brokers)
        return kafka_topics.unanswered_brokers(brokers, seconds)

    monkeypatch.setattr(kafka_source, "unanswered_brokers", unanswered_brokers)
    with socket.create_server(("127.0.0.1", 0)) as other:
        port = f"127.0.0.1:{other.getsockname()[1]}"
        monkeypatch.setenv("SPLICE_KAFKA_BOOTSTRAP", f"{dead},{port}")
        messages = []
        for _ in range(2):
            with pytest.raises(SourceError) as err:
                bootstrap(step, io)
            messages.append(str(err.value))
    assert messages == [(
        f"source 'orders' (declared at p.sql:1:1) reads Kafka topic 'orders' at {dead},{port}, "
        "which accepts a connection but does not answer as a Kafka broker within 1 s (Failed "
        "to get metadata: Local: Broker transport failure): name a broker's listener (its "
        "advertised.listeners), not another server's port, in SPLICE_KAFKA_BOOTSTRAP (Dagster: "
        "SparkResource's kafka_bootstrap)")] * 2
    assert asked == [f"{dead},{port}"]
    # Remembered only while a run asks twice: a later run asks again.
    monkeypatch.setattr(kafka_source, "_SILENT_REMEMBERED", 0.0)
    with socket.create_server(("127.0.0.1", 0)) as other:
        port = f"127.0.0.1:{other.getsockname()[1]}"
        monkeypatch.setenv("SPLICE_KAFKA_BOOTSTRAP", port)
        for _ in range(2):
            with pytest.raises(SourceError):
                bootstrap(step, io)
    assert asked[1:] == [port, port]

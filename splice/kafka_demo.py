"""The demo over Kafka (``splice demo --kafka``, ``bash scripts/demo.sh
--kafka``): the demo's customers and orders produced as JSON records to two
topics, the same join pipeline reading them (examples/kafka_demo, in
ksqlDB's words), the same outputs.

The broker is ``SPLICE_KAFKA_BOOTSTRAP`` (or the settings file's), else
the one ``scripts/kafka.sh`` runs, started here if it is not running. Like
the plain demo, it starts afresh: the warehouse is emptied and the two
topics are deleted and created again.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from splice.demo import CUSTOMERS, ORDERS, fresh_warehouse

ROOT = Path(__file__).resolve().parent.parent
PIPELINE = ROOT / "examples" / "kafka_demo"


def broker_address(settings: Any) -> str:
    """The brokers to use: the settings', else scripts/kafka.sh's broker
    (started when it is not running; its address is printed)."""
    if settings.kafka_bootstrap:
        return settings.kafka_bootstrap
    from splice.kafka_broker import start_broker

    broker = start_broker()
    print(f"Kafka broker: {broker.bootstrap} (scripts/kafka.sh's; stop it with "
          "bash scripts/kafka.sh stop)", flush=True)
    return broker.bootstrap


def produce_demo_data(bootstrap: str, topics: dict[str, str]) -> None:
    """The demo's rows as records on fresh topics (``source name -> topic``),
    keyed by id (ksqlDB's KAFKA key format); the bad order as well."""
    from engine.kafka_topics import Record, produce

    for topic in topics.values():
        _recreate(bootstrap, topic)
    produce(bootstrap, topics["customers"], [Record(c, str(c["id"])) for c in CUSTOMERS])
    produce(bootstrap, topics["orders"], [Record(o, str(o["id"])) for o in ORDERS])


def _recreate(bootstrap: str, topic: str, timeout: float = 60.0) -> None:
    """Delete ``topic`` if it is there, then create it; the broker finishes a
    deletion in the background, so creation is tried until it is accepted."""
    from confluent_kafka import KafkaException

    from engine.kafka_topics import create_topic, delete_topic

    delete_topic(bootstrap, topic)
    deadline = time.monotonic() + timeout
    while True:
        try:
            create_topic(bootstrap, topic)
            return
        except KafkaException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def run_kafka_demo(warehouse: str, settings: Any) -> Any:
    """Produce the demo's records, run the pipeline on a fresh warehouse;
    the run's StepIO (for its outputs)."""
    from engine.session import start_session
    from runtime.planner import planned
    from splice.cli import run_and_report
    from splice.compile import compile_path

    pipeline = compile_path(PIPELINE)
    bootstrap = broker_address(settings)
    settings = settings.model_copy(update={"kafka_bootstrap": bootstrap, "warehouse": warehouse})
    produce_demo_data(bootstrap, {name: source.options["topic"]
                                  for name, source in pipeline.sources.items()})
    spark = start_session(settings.with_packages(planned(pipeline).packages()))
    fresh_warehouse(spark, warehouse)
    _, io = run_and_report(pipeline, settings=settings)
    return io

"""``splice demo``: the demo pipeline over data it writes itself, its outputs
printed. With ``--kafka`` (``bash scripts/demo.sh --kafka``) the demo's
customers and orders are produced as JSON records to two topics, the same
join pipeline reads them (examples/kafka_demo, in ksqlDB's words) and gives
the same outputs.

The broker is ``SPLICE_KAFKA_BOOTSTRAP`` (or the settings file's), else
the one ``scripts/kafka.sh`` runs, started here if it is not running. Like
the plain demo, it starts afresh: the warehouse is emptied and the two
topics are deleted and created again."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from splice.cli.flags import settings_of
from splice.cli.run import run_and_report
from splice.physical.base import PhysicalPlan
from splice.testing.kafka_broker import broker_address

ROOT = Path(__file__).resolve().parents[2]
KAFKA_PIPELINE = ROOT / "examples" / "kafka_demo"

CUSTOMERS = [{"id": 1, "name": "John"}, {"id": 2, "name": "Frank"}]
ORDERS = [
    {"id": 1, "customer_id": 1, "item": "Computer"},
    {"id": 2, "customer_id": 1, "item": "Mouse"},
    {"id": 3, "customer_id": 3, "item": "Keyboard"},
    # Not an order: customer_id is not a number. It goes to the dead-letter table.
    {"id": 4, "customer_id": "three", "item": "Screen"},
]


class DemoRefused(Exception):
    """The demo will not delete a folder that is not a Splice warehouse."""


def write_demo_data(pipeline: PhysicalPlan, warehouse: str, settings: Any = None) -> None:
    """Start the demo warehouse afresh and write its source data."""
    from splice.engine.settings import SpliceSettings, Warehouse
    from splice.runtime.workspace import Workspace
    from splice.testing.cases import append_rows

    workspace = Workspace(pipeline, settings or SpliceSettings.from_env(warehouse=warehouse),
                          warehouse=Warehouse(root=warehouse))
    # The session first: on s3a:// it checks the bucket and sets up the file
    # layer (engine/fs.py) with the storage's endpoint and credentials.
    fresh_warehouse(workspace.start(), warehouse)
    io = workspace.io
    sources = pipeline.sources
    append_rows(io, sources["customers"], CUSTOMERS)
    append_rows(io, sources["orders"], ORDERS)


def fresh_warehouse(spark: Any, warehouse: str) -> None:
    """Empty the demo's warehouse, unless it holds something else than a
    Splice warehouse (then :class:`DemoRefused`)."""
    from splice.engine import fs

    root = warehouse if "://" in warehouse else str(Path(warehouse).resolve())
    names = fs.list_names(spark, root)
    if names and "_splice" not in names:
        raise DemoRefused(f"{root} is not empty and is not a Splice warehouse; "
                          "the demo starts its warehouse afresh, so give it an empty or new "
                          "folder with --warehouse")
    fs.remove_tree(spark, root)


def show_outputs(io: Any, limit: int = 10) -> None:
    """Each output table: its location, its row count and its first rows; then
    what went to the dead-letter tables."""
    spark = io.spark
    for name, step in io.pipeline.outputs.items():
        path = io.table_path(step)
        df = spark.read.format("delta").load(path)
        print(f"\noutput {name} ({step.kind.value}) at {path}: {df.count()} rows")
        df.show(limit, truncate=False)
    for source in io.pipeline.sources.values():
        path = io.warehouse.dead_letter_path(io.pipeline.name, source.name)
        from splice.engine.io import delta_exists

        if delta_exists(spark, path):
            dead = spark.read.format("delta").load(path)
            if dead.count():
                print(f"dead-letter table of {source.name} at {path}:")
                dead.select("record", "reason").show(limit, truncate=False)


def add_parser(sub: Any) -> None:
    p = sub.add_parser("demo", help="write the demo data, run the demo pipeline, show outputs")
    p.add_argument("--warehouse", default=None,
                   help="the demo's warehouse folder (default SPLICE_WAREHOUSE, else warehouse)")
    p.add_argument("--pipeline", default="pipelines/demo")
    p.add_argument("--kafka", action="store_true",
                   help="the demo over Kafka topics (examples/kafka_demo): produce the data to "
                        "topics on SPLICE_KAFKA_BOOTSTRAP, else on scripts/kafka.sh's broker "
                        "(started if needed)")

    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from splice.runtime.compile import compile_path

    settings = settings_of(args)
    pipeline = None if args.kafka else compile_path(args.pipeline)  # before a word is printed
    shown = settings.warehouse if "://" in settings.warehouse \
        else Path(settings.warehouse).resolve()
    print(f"demo warehouse: {shown} (written afresh)")
    if args.kafka:
        try:
            show_outputs(run_kafka_demo(settings.warehouse, settings))
        except DemoRefused as err:
            print(f"splice: {err}", file=sys.stderr)
            return 2
        return 0
    assert pipeline is not None
    try:
        write_demo_data(pipeline, settings.warehouse, settings)
    except DemoRefused as err:
        print(f"splice: {err}", file=sys.stderr)
        return 2
    _, workspace = run_and_report(pipeline, settings=settings)
    show_outputs(workspace.io)
    return 0




def produce_demo_data(bootstrap: str, topics: dict[str, str]) -> None:
    """The demo's rows as records on fresh topics (``source name -> topic``),
    keyed by id (ksqlDB's KAFKA key format); the bad order as well."""
    from splice.engine.kafka_topics import Record, produce

    for topic in topics.values():
        _recreate(bootstrap, topic)
    produce(bootstrap, topics["customers"], [Record(c, str(c["id"])) for c in CUSTOMERS])
    produce(bootstrap, topics["orders"], [Record(o, str(o["id"])) for o in ORDERS])


def _recreate(bootstrap: str, topic: str, timeout: float = 60.0) -> None:
    """Delete ``topic`` if it is there, then create it; the broker finishes a
    deletion in the background, so creation is tried until it is accepted."""
    from confluent_kafka import KafkaException

    from splice.engine.kafka_topics import create_topic, delete_topic

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
    from splice.runtime.compile import compile_path
    from splice.runtime.workspace import Workspace

    pipeline = compile_path(KAFKA_PIPELINE)
    bootstrap = broker_address(settings)
    settings = settings.model_copy(update={"kafka_bootstrap": bootstrap, "warehouse": warehouse})
    produce_demo_data(bootstrap, {name: source.options["topic"]
                                  for name, source in pipeline.sources.items()})
    fresh_warehouse(Workspace(pipeline, settings).start(), warehouse)
    _, workspace = run_and_report(pipeline, settings=settings)
    return workspace.io

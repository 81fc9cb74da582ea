"""Reading and writing step tables.

Every step's rows are stored as a Delta table: ``_key``, the value columns,
``ROWTIME``. Appends and merges are marked with the micro-batch that wrote
them (an application id unique to the step's checkpoint, and the batch id;
engine/marks.py), and a write whose batch the table holds already is
skipped, so a micro-batch replayed after a crash writes nothing twice.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DataType, MapType, StructField, StructType
from splice.engine import delta_sql, faults, fs
from splice.engine.delta_log import (
    commit_actions,
    commit_file,
    commit_versions,
    latest_version,
    log_folder,
    versions_in,
)
from splice.engine.delta_sql import create_if_absent, insert_values, update_set
from splice.engine.marks import USER_METADATA, batch_note, marked_batch
from splice.engine.settings import Warehouse
from splice.engine.stream_start import delta_stream
from splice.physical.base import PhysicalPlan
from splice.sql.columns import KEY as KEY  # re-exported: defined once in sql/columns.py
from splice.sql.columns import ROWTIME as ROWTIME
from splice.sql.plan import Kind, Relation, SourceStep, Step

if TYPE_CHECKING:  # engine/query.py imports this module: the executor's type only
    from splice.engine.query import Executor


def has_fact(relation: Relation) -> Column:
    """A stream record whose value columns are all NULL carries no fact, and
    joins and aggregations skip it (ksqlDB); read as a table the same record
    is a tombstone."""
    if not relation.columns:
        return F.lit(True)
    return F.expr(" OR ".join(f"`{c.name}` IS NOT NULL" for c in relation.columns))


@dataclass
class StepIO:
    """Where a pipeline's steps live, and how to read them.

    ``executors`` holds every node's executor by step id, looked up once by
    the runtime (``splice.runtime.executors.bind``; the engine knows no
    executor): an input step is read as a stream through its own (a source
    normalizes its table), and a step's run takes its own from there."""

    spark: SparkSession
    warehouse: Warehouse
    pipeline: PhysicalPlan
    executors: Mapping[str, Executor[Any]] | None = None
    # The Kafka brokers of topic sources whose statement names none
    # (SpliceSettings.kafka_bootstrap; None: SPLICE_KAFKA_BOOTSTRAP).
    kafka_bootstrap: str | None = None
    # What a Kafka source does with records its broker deleted unread
    # (SpliceSettings.kafka_lost_records; None: SPLICE_KAFKA_LOST_RECORDS).
    kafka_lost_records: str | None = None
    # The schema registry's client settings (SpliceSettings' registry, as
    # splice.engine.schema_registry.registry_config gives them); None: the
    # settings of the environment and splice.yaml.
    schema_registry: Mapping[str, str] | None = None
    # How a Kafka sink delivers (SpliceSettings.processing_guarantee; None:
    # SPLICE_PROCESSING_GUARANTEE, else exactly_once_v2).
    processing_guarantee: str | None = None
    # The checkpoint of the query that reads the streams made here, which
    # decides where a new stream of a table starts (engine/stream_start.py);
    # None: as Delta starts it. ``reading_for`` sets it.
    stream_checkpoint: str | None = None

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Under Spark Connect a micro-batch's function runs in the server's
        Python worker and is pickled there with what it holds: a StepIO
        travels without the client's session (and its stream reader), and
        takes the worker's session (the micro-batch's) on arrival."""
        # A plain layout: a Dagster resource (a subclass) holds locks.
        layout = Warehouse(root=self.warehouse.root)
        return _restored_io, (layout, self.pipeline, self.kafka_bootstrap,
                              self.kafka_lost_records, self.schema_registry,
                              self.processing_guarantee)

    def table_path(self, step: Step) -> str:
        if isinstance(step, SourceStep):
            if step.format == "delta":
                return self.warehouse.source_path(step.location)
            return self.warehouse.step_path(self.pipeline.name, step.id)
        if step.output:
            return self.warehouse.output_path(step.output)
        return self.warehouse.step_path(self.pipeline.name, step.id)

    def checkpoint(self, step: Step) -> str:
        return self.warehouse.checkpoint_path(self.pipeline.name, step.id)

    def reading_for(self, step: Step) -> StepIO:
        """This StepIO for building ``step``'s query: the streams it reads
        start where its checkpoint decided."""
        return replace(self, stream_checkpoint=self.checkpoint(step))

    def read_stream(self, step_id: str, **options: str) -> DataFrame:
        """An input step's rows as a stream, in the stored layout, read by
        the input's executor."""
        if self.executors is None:
            raise RuntimeError("this StepIO reads no input: build it with splice.Workspace, "
                               "which binds the plan's executors")
        return self.executors[step_id].read_stream(self.pipeline.node(step_id), self, options)

    def read_delta_stream(self, step: Step, options: dict[str, str]) -> DataFrame:
        """A step's stored Delta table as a stream."""
        return delta_stream(self.spark, self.table_path(step), options,
                            checkpoint=self.stream_checkpoint)

    def read_changes(self, step_id: str) -> DataFrame:
        """A table step's change feed as a stream: its whole content as
        inserts first (as of one version, or, for a new stream of a table
        that was only ever appended to, commit by commit:
        engine/stream_start.py), then every change (update pre- and
        post-images, deletes), with ``_change_type``."""
        step = self.pipeline.step(step_id)
        assert step.kind == Kind.TABLE, f"{step_id} is not a table"
        return delta_stream(self.spark, self.table_path(step), change_feed=True,
                            checkpoint=self.stream_checkpoint)

    def read_table(self, step_id: str) -> DataFrame:
        """A table step's current rows, read afresh on every call."""
        step = self.pipeline.step(step_id)
        assert step.kind == Kind.TABLE, f"{step_id} is not a table"
        return self.read_stored(step)

    def read_stored(self, step: Step) -> DataFrame:
        """What ``step`` has stored, as a batch: a stream's rows so far, a
        table's current rows (what ``splice test`` compares)."""
        return self.spark.read.format("delta").load(self.table_path(step))


def delta_exists(spark: SparkSession, path: str) -> bool:
    return delta_version(spark, path) is not None


def delta_version(spark: SparkSession, path: str) -> int | None:
    """The table's latest version, from its transaction log's file names."""
    return latest_version(spark, path)


def commits_since(spark: SparkSession, path: str, version: int | None) -> list[dict]:
    """The commitInfo of every commit after ``version``."""
    infos = []
    for number in commit_versions(spark, path):
        if version is not None and number <= version:
            continue
        for action in commit_actions(spark, path, number):
            if "commitInfo" in action:
                infos.append(action["commitInfo"])
    return infos


def appended_since(spark: SparkSession, path: str, version: int, to: int) -> list[str] | None:
    """The data files that the commits ``version + 1`` to ``to`` of the Delta
    table at ``path`` added, when those commits only appended (no file
    removed or rewritten, no deletion vector); None otherwise, or when one
    of their log files is gone (cleaned up): then only a whole read answers."""
    from urllib.parse import unquote

    added = []
    for number in range(version + 1, to + 1):
        if not fs.exists(spark, commit_file(path, number)):
            return None
        for action in commit_actions(spark, path, number):
            if "remove" in action or "cdc" in action:
                return None
            add = action.get("add")
            if add is not None:
                if add.get("deletionVector") or "://" in add["path"]:
                    return None
                added.append(f"{path.rstrip('/')}/{unquote(add['path'])}")
    return added


def _restored_io(warehouse: Warehouse, pipeline: PhysicalPlan, kafka_bootstrap: str | None,
                 kafka_lost_records: str | None = None,
                 schema_registry: Mapping[str, str] | None = None,
                 processing_guarantee: str | None = None) -> StepIO:
    return StepIO(spark=SparkSession.active(), warehouse=warehouse, pipeline=pipeline,
                  kafka_bootstrap=kafka_bootstrap, kafka_lost_records=kafka_lost_records,
                  schema_registry=schema_registry, processing_guarantee=processing_guarantee)


def notes_since(spark: SparkSession, path: str, version: int | None) -> list[dict]:
    """What the commits after ``version`` say of themselves: each one's
    Delta ``userMetadata`` that is a JSON object (a step notes how it wrote,
    such as the plan a table-table join chose)."""
    notes = []
    for info in commits_since(spark, path, version):
        try:
            note = json.loads(info.get("userMetadata") or "null")
        except ValueError:
            continue
        if isinstance(note, dict):
            notes.append(note)
    return notes


def rows_written_since(spark: SparkSession, path: str, version: int | None) -> int:
    """Rows added, changed or deleted by the commits after ``version``,
    from Delta's own operation metrics."""
    total = 0
    for info in commits_since(spark, path, version):
        metrics = info.get("operationMetrics") or {}
        operation = info.get("operation")
        if operation in ("WRITE", "STREAMING UPDATE"):
            total += int(metrics.get("numOutputRows", 0))
        elif operation == "MERGE":
            total += sum(int(metrics.get(k, 0)) for k in (
                "numTargetRowsInserted", "numTargetRowsUpdated", "numTargetRowsDeleted"))
        elif operation == "DELETE":
            total += int(metrics.get("numDeletedRows", 0))
    return total


def table_rows(spark: SparkSession, path: str) -> int:
    """Rows of the Delta table at ``path``: Delta answers a bare count from
    its log's file statistics, without reading the data."""
    return spark.read.format("delta").load(path).count()


def table_files(spark: SparkSession, path: str) -> int:
    """The data files of the Delta table at ``path`` (``DESCRIBE DETAIL``,
    from its log; the snapshot it reads is the one a write then uses)."""
    return int(delta_sql.detail(spark, path)["numFiles"] or 0)


def ensure_table(spark: SparkSession, path: str, schema: StructType,
                 change_feed: bool = False) -> None:
    """Create an empty Delta table at ``path`` unless one is there, so that
    readers downstream find it before the first row arrives.

    ``CREATE TABLE`` writes the first commit alone, with no Spark job
    (writing an empty DataFrame cost twice as long here, for every step and
    dead-letter table). Every field is stored nullable, as a DataFrame write
    stores it: NOT NULL flags would become constraints that refuse a later
    row."""
    if delta_exists(spark, path):
        return
    drop_uncommitted_log(spark, path)
    # Tables are maintained by MERGE: the change feed lets the next step
    # read their changes. Deletion vectors stay off: with them every query
    # planned over the table ran one more Spark job (Delta's data skipping),
    # and a stream-table join plans its table read in every micro-batch;
    # tables without them are also readable by Delta readers that predate
    # table features (docs/decisions/tables.md).
    create_if_absent(spark, path, _nullable(schema),
                     {"delta.enableChangeDataFeed": "true"} if change_feed else None)


def drop_uncommitted_log(spark: SparkSession, path: str) -> None:
    """Remove a transaction log folder that holds no commit (nothing, or a
    first commit's temporary file: a run killed, or out of disk space, while
    it created the table). Delta takes any ``_delta_log`` folder for a table,
    so ``CREATE TABLE IF NOT EXISTS`` there did nothing and the step's first
    MERGE failed with "Delta table ... doesn't exist" on every rerun
    (tests/crash/test_disk_full.py, mid-run). A log with a commit or a
    checkpoint is never touched."""
    folder = log_folder(path)
    names = fs.list_names(spark, folder)
    if not names and not fs.exists(spark, folder):
        return
    if versions_in(names) or any(".checkpoint." in n or n == "_last_checkpoint"
                                 for n in names):
        return
    fs.remove_tree(spark, folder)


def _nullable(typ: DataType) -> Any:
    if isinstance(typ, StructType):
        return StructType([StructField(f.name, _nullable(f.dataType), True, f.metadata)
                           for f in typ.fields])
    if isinstance(typ, ArrayType):
        return ArrayType(_nullable(typ.elementType), True)
    if isinstance(typ, MapType):
        return MapType(_nullable(typ.keyType), _nullable(typ.valueType), True)
    return typ


def app_id(spark: SparkSession, checkpoint: str) -> str:
    """An id unique to one checkpoint: a step's writes are marked with (app
    id, batch id), and batch ids start again at 0 with a new checkpoint."""
    marker = f"{checkpoint}/splice_app_id"
    if fs.exists(spark, marker):
        value = fs.read_text(spark, marker).strip()
        if value:  # an empty marker (a crash mid-write) names no id: make one
            return value
    value = f"splice-{uuid.uuid4()}"
    fs.write_text(spark, marker, value)
    return value


def committed_batch(spark: SparkSession, path: str, txn_app: str) -> int | None:
    """The last micro-batch id that ``txn_app`` committed to the Delta table
    at ``path`` (None if it committed none), from the marks of the table's
    log (engine/marks.py), newest commit first: the commit a replay would
    find is one of the last few.

    A commit file may be gone after Delta's log clean-up, which maintenance
    runs only once every step has committed its last micro-batch (so no
    replay needs it); a table's checkpoint then still holds the last
    ``txn`` action of a table written before the marks moved to the
    commits."""
    log = log_folder(path)
    names = fs.list_names(spark, log)
    for version in reversed(versions_in(names)):
        for action in commit_actions(spark, path, version):
            batch = marked_batch(action, txn_app)
            if batch is not None:
                return batch
    checkpoints = [n for n in names if n.endswith(".checkpoint.parquet")]
    if not checkpoints:
        return None
    rows = (spark.read.parquet(*[f"{log}/{n}" for n in checkpoints])
            .where(f"txn.appId = '{txn_app}'").select("txn.version").collect())
    return max((int(r[0]) for r in rows), default=None)


def is_written(spark: SparkSession, path: str, txn_app: str, batch_id: int) -> bool:
    """Whether micro-batch ``batch_id`` of ``txn_app`` is in the table
    already (a replay of a batch written before a crash)."""
    last = committed_batch(spark, path, txn_app)
    return last is not None and last >= batch_id


def append(df: DataFrame, path: str, txn_app: str, batch_id: int,
           merge_schema: bool = False) -> bool:
    """Append, marked with (app id, batch id), unless the table holds that
    batch already; whether it wrote. ``merge_schema`` lets the rows add
    columns a table written by an older version lacks."""
    return _write_marked(df, path, txn_app, batch_id, "append",
                         {"mergeSchema": "true"} if merge_schema else {})


def overwrite(df: DataFrame, path: str, txn_app: str, batch_id: int,
              note: str | None = None) -> bool:
    """Replace the table's rows with ``df``, marked with (app id, batch id)
    and ``note`` (a JSON object), unless the table holds that batch already;
    whether it wrote."""
    return _write_marked(df, path, txn_app, batch_id, "overwrite", {}, note)


def _write_marked(df: DataFrame, path: str, txn_app: str, batch_id: int, mode: str,
                  options: dict[str, str], note: str | None = None) -> bool:
    if is_written(df.sparkSession, path, txn_app, batch_id):
        return False
    (df.write.format("delta").mode(mode).options(**options)
     .option("userMetadata", batch_note(txn_app, batch_id, note)).save(path))
    return True


@contextmanager
def marked_dml(spark: SparkSession, path: str, txn_app: str, batch_id: int) -> Iterator[bool]:
    """Whether the DML (a MERGE) on the table at ``path`` inside is to run:
    not when the table holds micro-batch ``batch_id`` of ``txn_app``
    already. When it runs, its commit carries the batch's mark, beside the
    note the session holds (``noted`` of a table-table join's plan)."""
    if is_written(spark, path, txn_app, batch_id):
        yield False
        return
    note = spark.conf.get(USER_METADATA, None)
    spark.conf.set(USER_METADATA, batch_note(txn_app, batch_id, note))
    try:
        yield True
    finally:
        if note is None:
            spark.conf.unset(USER_METADATA)
        else:
            spark.conf.set(USER_METADATA, note)


def merge_by_key(spark: SparkSession, path: str, rows: DataFrame, delete: str,
                 columns: list[str], txn_app: str, batch_id: int, step_id: str = "") -> None:
    """Upsert ``rows`` into the Delta table at ``path`` by ``_key``; a row for
    which the SQL condition ``delete`` holds deletes its key instead. One
    MERGE, marked with the micro-batch, so a replayed micro-batch changes
    nothing. ``step_id`` names the step for the kill point inside the MERGE
    (engine/faults.py)."""
    with marked_dml(spark, path, txn_app, batch_id) as fresh:
        if not fresh:
            return
        killer = faults.merge_killer(step_id)
        if killer is not None:
            # A run armed to die inside this MERGE: the source as plain rows
            # (a test's few), so that no cached plan is in it, read again by
            # each phase of the MERGE (not materialized) through the killing
            # filter.
            spark.conf.set("spark.databricks.delta.merge.materializeSource", "none")
            rows = spark.createDataFrame(rows.collect(), rows.schema).where(killer)
        delta_sql.merge(spark, path, rows, "t._key <=> s._key", [
            f"WHEN MATCHED AND s.{delete} THEN DELETE",
            f"WHEN MATCHED AND NOT s.{delete} THEN UPDATE SET {update_set(columns, 's')}",
            f"WHEN NOT MATCHED AND NOT s.{delete} THEN INSERT {insert_values(columns, 's')}",
        ])


def empty_like(spark: SparkSession, schema: StructType) -> DataFrame:
    return spark.createDataFrame([], schema)

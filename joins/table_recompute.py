"""The recompute plan of a table-table join: the whole join, written as the
plan choice says (``joins/table_plan.py``)."""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from splice.engine.io import KEY, merge_by_key, overwrite
from splice.engine.query import BatchTarget
from splice.joins.table_plan import PlanChoice, Write


def write_recomputed(result: DataFrame, choice: PlanChoice, target: BatchTarget,
                     keep: Callable[[DataFrame], DataFrame]) -> None:
    """Store ``result``, the join's whole result, in the table at
    ``target.path`` as ``choice`` says: overwritten, or (``Write.MERGE_DIFFERING``) by one MERGE
    of the rows that differ from those stored, so that the table's change
    feed holds only real changes. Either write is marked with the
    micro-batch (engine/marks.py): a replayed one writes nothing twice; and
    with the choice, as its note (a MERGE takes it from the session's
    setting)."""
    if choice.write == Write.OVERWRITE:
        overwrite(result, target.path, target.txn_app, target.batch_id, choice.to_json())
        return
    stored = target.spark.read.format("delta").load(target.path).select(result.columns)
    result = keep(result)
    # Rows are unique by _key in both, so a row of the result that is not
    # stored as it is is new or changed, and a stored key the result lacks
    # is gone. EXCEPT compares NULLs as equal, as a stored row is compared.
    differing = result.subtract(stored)
    gone = stored.select(KEY).subtract(result.select(KEY))
    # MERGE reads its source twice; Delta materializes it once first, as it
    # holds the cached result (not only Delta scans): see TableTableQuery._merge.
    source = (differing.withColumn("__delete", F.lit(False))
              .unionByName(gone.withColumn("__delete", F.lit(True)),
                           allowMissingColumns=True))
    merge_by_key(target.spark, target.path, source, "__delete", result.columns,
                 target.txn_app, target.batch_id, target.step_id)

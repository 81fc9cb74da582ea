"""Each write of a step's micro-batch marks its Delta commit with the batch.

A step's writes are idempotent: a micro-batch that a crash made Spark run
again must not write twice. Delta offers marks of its own for that
(``txnAppId``/``txnVersion``, or the session's ``write.txnAppId``), but
Delta 4.4 answers "has this batch been written?" from the table's whole
reconstructed state: two Spark jobs before every append, however small (a
MERGE reconstructs it anyway, to scan its target;
docs/decisions/micro-batch-marks.md). Splice answers it from the log's
newest commit files instead, which it reads without Spark
(``splice.engine.io.committed_batch``), and marks each commit in Delta's
public ``userMetadata``: a JSON object holding ``splice_batch: {app,
batch}`` beside any note of the step's own (the plan a table-table join
chose). The pipeline's lock (runtime/lock.py) makes the check and the write
one writer's.

A table written before the marks moved here carries Delta's ``txn``
actions instead; both are read.
"""

from __future__ import annotations

import json
from typing import Any

BATCH_MARK = "splice_batch"
# Delta's session setting for the userMetadata of the DML (MERGE) run in it.
USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"


def batch_note(txn_app: str, batch_id: int, note: str | None = None) -> str:
    """The ``userMetadata`` of a commit of micro-batch ``batch_id`` by the
    checkpoint ``txn_app``: ``note`` (a JSON object, or nothing) with the mark."""
    fields: dict[str, Any] = {}
    if note:
        try:
            parsed = json.loads(note)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            fields = parsed
    return json.dumps({**fields, BATCH_MARK: {"app": txn_app, "batch": int(batch_id)}})


def marked_batch(action: dict[str, Any], txn_app: str) -> int | None:
    """The micro-batch of ``txn_app`` that one action of a commit file
    records: Splice's mark in a ``commitInfo``, or Delta's ``txn``."""
    txn = action.get("txn")
    if txn and txn.get("appId") == txn_app:
        return int(txn["version"])
    info = action.get("commitInfo")
    if not info or not info.get("userMetadata"):
        return None
    try:
        note = json.loads(info["userMetadata"])
    except (TypeError, ValueError):
        return None
    mark = note.get(BATCH_MARK) if isinstance(note, dict) else None
    if isinstance(mark, dict) and mark.get("app") == txn_app:
        return int(mark["batch"])
    return None

"""The micro-batch marks of a step's commits (engine/marks.py), read from
the commit actions a Delta log holds (no Spark)."""

from __future__ import annotations

import json

from splice.engine.marks import BATCH_MARK, batch_note, marked_batch


def test_a_note_keeps_the_steps_own_fields_beside_the_mark() -> None:
    plan = json.dumps({"plan": {"name": "recompute"}})
    note = json.loads(batch_note("splice-a", 7, plan))
    assert note == {"plan": {"name": "recompute"}, BATCH_MARK: {"app": "splice-a", "batch": 7}}
    assert json.loads(batch_note("splice-a", 3)) == {BATCH_MARK: {"app": "splice-a", "batch": 3}}
    # a note that is no JSON object is not kept (nothing of Splice's writes one)
    assert json.loads(batch_note("splice-a", 3, "free text")) == {
        BATCH_MARK: {"app": "splice-a", "batch": 3}}


def test_the_mark_of_this_checkpoint_is_found_in_a_commit_or_a_txn_action() -> None:
    commit = {"commitInfo": {"operation": "WRITE", "userMetadata": batch_note("splice-a", 4)}}
    assert marked_batch(commit, "splice-a") == 4
    assert marked_batch(commit, "splice-b") is None  # another checkpoint's batch
    # a table written before the marks moved to the commits: Delta's txn action
    assert marked_batch({"txn": {"appId": "splice-a", "version": 9}}, "splice-a") == 9
    for other in ({"commitInfo": {"operation": "OPTIMIZE"}},
                  {"commitInfo": {"userMetadata": "not json"}},
                  {"commitInfo": {"userMetadata": json.dumps({"plan": {}})}},
                  {"commitInfo": {"userMetadata": json.dumps([1, 2])}},
                  {"add": {"path": "x.parquet"}}):
        assert marked_batch(other, "splice-a") is None

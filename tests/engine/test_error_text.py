"""The root cause of an error's text, without Spark (engine/errors.py)."""

from __future__ import annotations

import pytest
from splice.engine.errors import recorded, root_cause, take_recorded, transient

# The shape of a Py4J error raised inside foreachBatch (frames shortened).
WRITE_FAILED = """An error occurred while calling o156.save.
: org.apache.spark.SparkException: [TASK_WRITE_FAILED] Task failed while writing rows to \
file:/wh/t. SQLSTATE: 58030
\tat org.apache.spark.sql.errors.QueryExecutionErrors$.taskFailedWhileWritingRowsError(X.scala:1)
\tat java.base/java.lang.Thread.run(Thread.java:840)
Caused by: org.apache.spark.SparkNumberFormatException: [CAST_INVALID_INPUT] The value 'two' \
of the type "STRING" cannot be cast to "INT" because it is malformed. SQLSTATE: 22018
== SQL (line 1, position 1) ==
CAST(`s` AS INT)
^^^^^^^^^^^^^^^^

\tat org.apache.spark.sql.errors.QueryExecutionErrors$.invalidInputInCastToNumberError(X.scala:1)
\t... 12 more
"""

READ_FAILED = """An error occurred while calling o307.load.
: org.apache.spark.SparkException: [FAILED_READ_FILE.NO_HINT] Encountered error while reading \
file file:/wh/c/_delta_log/00000000000000000001.json.  SQLSTATE: KD001
\tat org.apache.spark.sql.errors.QueryExecutionErrors$.cannotReadFilesError(X.scala:1)
Caused by: org.apache.hadoop.fs.ChecksumException: Checksum error: file:/wh/c/_delta_log/1.json
\tat org.apache.hadoop.fs.ChecksumFileSystem(X.java:1)
"""


def test_the_innermost_classed_cause_with_the_sql_it_points_at() -> None:
    cause = root_cause(Exception(WRITE_FAILED))
    assert cause.summary == (
        "[CAST_INVALID_INPUT] The value 'two' of the type \"STRING\" cannot be cast to \"INT\" "
        "because it is malformed. (in: CAST(`s` AS INT))")
    assert cause.error_class == "CAST_INVALID_INPUT"
    assert cause.detail == WRITE_FAILED


def test_a_plain_java_cause_under_the_classed_one() -> None:
    assert root_cause(Exception(READ_FAILED)).summary == (
        "[FAILED_READ_FILE.NO_HINT] Encountered error while reading file "
        "file:/wh/c/_delta_log/00000000000000000001.json. (caused by ChecksumException: "
        "Checksum error: file:/wh/c/_delta_log/1.json)")


def test_a_python_exception_keeps_its_type() -> None:
    assert root_cause(ValueError("no such customer")).summary == "ValueError: no such customer"


def test_a_foreach_batch_function_records_what_it_raises() -> None:
    def write(df: object, batch_id: int) -> None:
        raise KeyError("region")

    wrapped = recorded(write, "/wh/_splice/p/checkpoints/s")
    with pytest.raises(KeyError):
        wrapped(None, 3)
    failure = take_recorded("/wh/_splice/p/checkpoints/s")
    assert failure is not None and failure.batch_id == 3
    assert failure.cause.summary == "KeyError: 'region'"
    assert take_recorded("/wh/_splice/p/checkpoints/s") is None


def test_only_a_failure_of_spark_s_machinery_is_transient() -> None:
    """The late-worker timeout is retried (its run under Connect:
    tests/engine/test_connect.py); a data error is not: it would fail again."""
    late = Exception("[STREAM_FAILED] Query [id = 1] terminated with exception: "
                     "SocketTimeoutException: Timed out while waiting for the Python worker "
                     "to connect back\n\tat org.apache.spark.api.python.X(X.scala:1)")
    assert transient(root_cause(late)) == (
        "Spark's Python worker for foreachBatch did not connect back within 10 s")
    assert transient(root_cause(Exception(WRITE_FAILED))) is None
    assert transient(root_cause(Exception(READ_FAILED))) is None

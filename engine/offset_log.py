"""A streaming checkpoint's offset and commit logs, read as files (no
Spark job): ``offsets/<batch>`` holds a version line, the batch's metadata
and one line of offsets per source; ``commits/<batch>`` marks the batch
done. Spark's ``.crc`` and temporary files are named otherwise."""

from __future__ import annotations

from typing import Any

from splice.engine import fs


def logged_batches(spark: Any, log: str) -> list[int]:
    """The micro-batch ids an offset or commit log folder names, in order."""
    return sorted(int(name) for name in fs.list_names(spark, log) if name.isdigit())


def source_offsets(spark: Any, checkpoint: str, batch_id: int) -> list[str]:
    """The sources' offsets of micro-batch ``batch_id`` (one JSON text a
    source, in the query's order of sources)."""
    return fs.read_text(spark, f"{checkpoint}/offsets/{batch_id}").splitlines()[2:]

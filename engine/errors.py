"""Why a step failed, in words: the root cause of a Spark failure.

Spark wraps the error that matters in layers: a streaming query that fails
raises ``[STREAM_FAILED]``, whose message holds the foreachBatch function's
``[FOREACH_BATCH_USER_FUNCTION_ERROR]`` with a Python traceback, whose
Py4J error holds ``[TASK_WRITE_FAILED]``, which was *caused by* the
``[CAST_INVALID_INPUT]`` the user needs to see. This module finds that
innermost cause, from public attributes and the error's text only (the
``Caused by:`` lines of the JVM stack trace that Py4J and Spark put in it),
and says it in one paragraph; the whole text stays available as the detail.

The exception a foreachBatch function raises is recorded before it goes back
to the JVM (:func:`recorded`): when the query then fails, that exception is
the cause, and the micro-batch it failed in is known.
"""

from __future__ import annotations

import errno
import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.errors import PySparkException
from splice.sql.plan import SourceStep, Step, StepBase

if TYPE_CHECKING:
    from splice.engine.io import StepIO

# Error classes that only wrap the error that caused them.
_WRAPPERS = {"STREAM_FAILED", "FOREACH_BATCH_USER_FUNCTION_ERROR", "TASK_WRITE_FAILED",
             "PYTHON_EXCEPTION"}
_ERROR_CLASS = re.compile(r"\[([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\] ")
# Where the message of one exception in a Java stack trace ends.
_MESSAGE_END = re.compile(r"^\s+at |^\s*\.\.\. \d+ more|^JVM stacktrace:|^Traceback ")
_SUMMARY_LIMIT = 700


@dataclass(frozen=True)
class Cause:
    """The innermost error of a failure: ``summary`` for the user (one
    paragraph, no stack frames), ``detail`` the whole text for logs."""

    summary: str
    detail: str
    error_class: str | None = None


def root_cause(err: BaseException) -> Cause:
    """The innermost cause of ``err`` that says something."""
    text = _full_text(err)
    condition = _condition(err)
    segments = _segments(text)
    classed = [(i, m) for i, s in enumerate(segments) if (m := _last_classed(s))]
    if classed:
        index, (error_class, message) = classed[-1]
        if error_class in _WRAPPERS and index == len(segments) - 1 and len(classed) > 1:
            index, (error_class, message) = classed[-2]
        summary = f"[{error_class}] {message}"
        deeper = segments[index + 1:]
        if deeper:  # plain Java exceptions under the last classed one
            summary += f" (caused by {_plain(deeper[-1])})"
        return Cause(_clip(summary), text, error_class)
    if not isinstance(err, PySparkException) and len(segments) == 1 and "\n" not in text:
        return Cause(_clip(f"{type(err).__name__}: {text}".rstrip(": ")), text, condition)
    return Cause(_clip(_plain(segments[-1]) or type(err).__name__), text, condition)


def _full_text(err: BaseException) -> str:
    text = str(err)
    return text if text.strip() else type(err).__name__


def _condition(err: BaseException) -> str | None:
    if isinstance(err, PySparkException):
        try:
            return err.getCondition()
        except Exception:  # a captured error whose JVM side is gone
            return None
    return None


def _segments(text: str) -> list[str]:
    """The messages of the exception and of each of its causes, outermost
    first, without stack frames and without a streaming query's description."""
    text = text.split("\n=== Streaming Query ===")[0]
    parts = text.split("\nCaused by: ")
    return [_message(p) for p in parts]


def _message(part: str) -> str:
    lines: list[str] = []
    for line in part.splitlines():
        if _MESSAGE_END.match(line) and lines:
            # a Python traceback inside a message goes on to the error it shows
            if line.startswith("Traceback "):
                lines.append(line)
                continue
            break
        lines.append(line)
    return "\n".join(lines).strip()


def _last_classed(segment: str) -> tuple[str, str] | None:
    """The last ``[ERROR_CLASS] message`` in one exception's message."""
    found = list(_ERROR_CLASS.finditer(segment))
    for match in reversed(found):
        if match.group(1) not in _WRAPPERS or match is found[0]:
            return match.group(1), _tidy(segment[match.end():])
    return None


def _tidy(message: str) -> str:
    """One paragraph: the message without SQLSTATE, with the SQL fragment
    Spark points at, if any."""
    fragment = ""
    if "\n== SQL" in message:
        message, _, context = message.partition("\n== SQL")
        context_lines = context.splitlines()[1:]
        if context_lines and context_lines[0].strip():
            fragment = f" (in: {context_lines[0].strip()})"
    elif "\n== DataFrame ==" in message:
        message = message.partition("\n== DataFrame ==")[0]
    message = re.split(r"\s*SQLSTATE: \w+", message)[0]
    return " ".join(message.split()) + fragment


def _plain(segment: str) -> str:
    """``SimpleClassName: message`` of a Java exception's message line."""
    first = " ".join(segment.split()).removeprefix(": ")
    head, sep, rest = first.partition(": ")
    if sep and " " not in head:
        return f"{head.rsplit('.', 1)[-1]}: {_tidy(rest)}"
    return _tidy(first)


def _clip(text: str) -> str:
    return text if len(text) <= _SUMMARY_LIMIT else text[:_SUMMARY_LIMIT - 3] + "..."


# -- what foreachBatch functions raise ----------------------------------------
@dataclass(frozen=True)
class BatchFailure:
    """The error a foreachBatch function raised, and in which micro-batch."""

    cause: Cause
    batch_id: int


_recorded: dict[str, BatchFailure] = {}
_lock = threading.Lock()


def recorded(func: Callable[[Any, int], None], key: str) -> Callable[[Any, int], None]:
    """``func`` as a foreachBatch function that records the exception it
    raises under ``key`` (a step's checkpoint: one query at a time writes
    it) before re-raising it. Only the words are kept, not the exception: its
    traceback holds the micro-batch's DataFrame, and the JVM holds this
    function for as long as the query lives."""
    forget(key)

    def run(df: Any, batch_id: int) -> None:
        try:
            func(df, batch_id)
        except BaseException as err:
            with _lock:
                _recorded[key] = BatchFailure(root_cause(err), batch_id)
            raise

    return run


def take_recorded(key: str) -> BatchFailure | None:
    """The failure recorded under ``key``, forgotten once taken."""
    with _lock:
        return _recorded.pop(key, None)


def forget(key: str) -> None:
    with _lock:
        _recorded.pop(key, None)


def quiet_spark_error_logs() -> None:
    """Spark's Python side logs a failure where it happens: PySpark every SQL
    error with a query context (a JSON line holding the JVM's stack trace),
    Py4J every exception a foreachBatch function raises (with its
    traceback). The CLI says the error once, in words, with the whole text
    in the log file; it silences those loggers."""
    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL)
    logging.getLogger("py4j.clientserver").setLevel(logging.CRITICAL)


# -- failures of Spark's machinery, not of the step ----------------------------
# Texts of failures a second run of the same step is expected to pass: Spark
# Connect starts a Python worker for a query's foreachBatch function and
# waits a fixed 10 s (not a setting in Spark 4.2) for it to connect back; on
# a loaded machine its start (importing pandas and PyArrow) can take longer.
_TRANSIENT = {
    "Timed out while waiting for the Python worker to connect back":
        "Spark's Python worker for foreachBatch did not connect back within 10 s",
}


def transient(cause: Cause) -> str | None:
    """Why ``cause`` is a failure of Spark's machinery that running the step
    again should get past (every write of a step is idempotent), or None."""
    for text, reason in _TRANSIENT.items():
        if text in cause.detail or text in cause.summary:
            return reason
    return None


# -- a step's failure, with what it was reading --------------------------------
def explain(step: Step, io: StepIO, err: BaseException) -> Cause:
    """Why ``step`` failed with ``err``: the root cause (the one its
    foreachBatch function recorded, if any), the input it names, and for a
    Delta input whose schema changed under a stream, what changed and what
    to do."""
    batch = take_recorded(io.checkpoint(step))
    cause = batch.cause if batch else root_cause(err)
    detail = cause.detail if batch is None else (
        f"{cause.detail}\n\n-- the query reported --\n{_full_text(err)}")
    if cause.error_class and cause.error_class.startswith("DELTA_SCHEMA_CHANGED"):
        # the streaming query's description names the Delta source it reads
        summary = _schema_changed(step, io, _input_named(step, io, detail), cause, detail)
    else:
        summary = cause.summary
        read = _input_named(step, io, cause.detail.split("\n=== Streaming Query ===")[0])
        if read is not None:
            summary += f"; while reading {_describe(read, io)}"
    if batch is not None:
        summary += f" (while writing micro-batch {batch.batch_id})"
    return Cause(summary, detail, cause.error_class)


def _local(text: str) -> str:
    return text.replace("file:///", "/").replace("file:/", "/")


def _input_named(step: Step, io: StepIO, text: str) -> Step | None:
    """The input of ``step`` whose table the error text names, if one does."""
    text = _local(text)
    for input_id in step.inputs:
        path = _local(io.table_path(io.pipeline.step(input_id))).rstrip("/")
        if re.search(re.escape(path) + r"(?=[\]/\s,'\"]|$)", text):
            return io.pipeline.step(input_id)
    return None


def _describe(read: Step, io: StepIO) -> str:
    path = io.table_path(read)
    if isinstance(read, SourceStep):
        return f"source '{read.name}' (Delta table at {path}, declared at {read.where})"
    return f"the table of step '{read.id}' at {path} (from {read.where})"


def _schema_changed(step: Step, io: StepIO, read: Step | None, cause: Cause,
                    detail: str) -> str:
    if read is None and len(step.inputs) == 1:
        read = io.pipeline.step(step.inputs[0])
    what = _describe(read, io) if read is not None else "an input Delta table"
    changes = _changes(detail, io, read)
    return (f"{what} changed its schema after step '{step.id}' started reading it as a "
            f"stream: {changes} [{cause.error_class}]. Restore the column's type in the "
            f"table, or rebuild the steps that read it: `splice run --rebuild {step.id}` "
            f"(or `--rebuild all`)")


def _changes(detail: str, io: StepIO, read: Step | None) -> str:
    """The columns that differ between the schema the stream started with
    and the table's schema now, from the two schemas Delta's error shows."""
    shown = [_tree_fields(detail, heading) for heading in
             ("streaming source schema:", "data file schema:")]
    now = _current_fields(io, read)
    if now is None:
        now = shown[0]
    before = shown[1] if shown[0] == now else shown[0]
    if not before or not now:
        return "its columns changed"
    said = [f"column '{n}' was {before[n]}, is {now[n]} now"
            for n in before if n in now and before[n] != now[n]]
    said += [f"column '{n}' was dropped" for n in before if n not in now]
    said += [f"column '{n}' was added ({now[n]})" for n in now if n not in before]
    return "; ".join(said) or "its columns changed"


_TREE_TYPES = {"integer": "INT", "long": "BIGINT", "short": "SMALLINT", "byte": "TINYINT"}


def _tree_fields(text: str, heading: str) -> dict[str, str]:
    """The top-level columns of a schema as ``printSchema`` shows it after
    ``heading`` (`` |-- id: integer (nullable = true)``)."""
    if heading not in text:
        return {}
    fields: dict[str, str] = {}
    for line in text.split(heading, 1)[1].splitlines()[1:]:
        if not line.strip():
            if fields:
                break
            continue
        if not line.startswith(" |-- "):
            if line.startswith(" |  "):  # a nested field
                continue
            break
        name, _, typ = line[5:].rpartition(": ")
        typ = typ.split(" (nullable")[0]
        fields[name] = _TREE_TYPES.get(typ, typ.upper())
    return fields


def _current_fields(io: StepIO, read: Step | None) -> dict[str, str] | None:
    if read is None:
        return None
    try:
        schema = io.spark.read.format("delta").load(io.table_path(read)).schema
    except Exception:  # the table cannot be read either: use what the error shows
        return None
    return {f.name: f.dataType.simpleString().upper() for f in schema.fields}


# -- faults of the machine and the network -------------------------------------
# A run a fault stopped (a full disk, an object store or a broker that did
# not answer) is in the state a crash leaves: every write of a step is a
# commit or nothing, and the next run goes on from each step's last commit
# (the kill-point tests, tests/crash/test_crash_safety.py; the fault tests,
# beside them in tests/crash/). What they say is where, during what, and that.
RERUN_SAFE = ("A rerun is safe: nothing the fault cut is taken for done, and the next run "
              "goes on from each step's last commit")
_DISK_FULL = "No space left on device"
_STORE_TEXTS = ("SdkClientException", "AWSClientIOException", "Unable to execute HTTP request",
                "ConnectException", "Connection refused", "connect timed out",
                "SocketTimeoutException", "NoHttpResponseException",
                "Could not connect to the endpoint URL", "EndpointConnectionError",
                "Connect timeout on endpoint URL", "Connection reset")
_STORE_MODULES = ("botocore", "aiobotocore", "aiohttp", "s3fs", "urllib3")
_BROKER_TEXTS = ("org.apache.kafka.common.errors.TimeoutException", "DisconnectException",
                 "Timeout of 60000ms expired", "KafkaException", "Broker transport failure",
                 "Connection refused", "Failed to resolve", "Timed out waiting")
_MODULE_WORDS = {"splice.runtime.lock": "holding the pipeline's lock", "splice.runtime.lease":
                 "holding the pipeline's lock (its lease)", "splice.runtime.claims":
                 "claiming the pipeline's names", "splice.engine.definitions":
                 "recording the steps' definitions", "splice.engine.session": "starting Spark",
                 "splice.engine.storage": "checking the storage", "splice.runtime.maintenance":
                 "maintaining the tables"}


def fault(err: BaseException, pipeline: Any, settings: Any) -> str | None:
    """``err`` as a fault of the machine or the network, in words (which
    folder is full, which store or brokers did not answer, during which
    step, whether a rerun is safe); None when it is none of those.
    ``pipeline`` is the compiled pipeline, ``settings`` the SpliceSettings
    of the run."""
    chain = _chain(err)
    text = "\n".join(_full_text(e) + "\n" + str(getattr(e, "detail", "")) for e in chain)
    during = _during(err)
    full = [e for e in chain if isinstance(e, OSError) and e.errno == errno.ENOSPC]
    if full or _DISK_FULL in text:
        folder = _full_folder(full[0].filename if full else None, settings)
        return disk_full(folder, during)
    kafka = _kafka_bootstrap(pipeline, settings)
    worded = getattr(err, "step", None) is not None  # a step's failure, in its own words
    if kafka and "kafka" in text.lower() and any(t in text for t in _BROKER_TEXTS):
        if worded and kafka in str(err):  # the step's own words name the brokers
            return f"{str(err).rstrip('. ')}. {RERUN_SAFE}"
        if worded:
            return (f"the Kafka brokers {kafka} did not answer: {str(err).rstrip('. ')}. Once "
                    f"they answer, run again. {RERUN_SAFE}")
        return (f"the Kafka brokers {kafka} did not answer {during}: "
                f"{_short(err, _BROKER_TEXTS, text)}. Once they answer (or the bootstrap "
                f"setting is fixed: SPLICE_KAFKA_BOOTSTRAP, or the source's own), run again. "
                f"{RERUN_SAFE}")
    s3 = [e for e in chain if type(e).__module__.split(".")[0] in _STORE_MODULES]
    uri = _s3_uri(text) or (settings.warehouse if _is_s3(settings.warehouse) else None)
    if uri and (s3 or any(t in text for t in _STORE_TEXTS)):
        endpoint = _s3_endpoint(settings)
        what = (f"the object store {endpoint} did not answer (at {uri}): {err}" if worded else
                f"the object store {endpoint} did not answer {during} (at {uri}): "
                f"{_short(s3[-1] if s3 else err, _STORE_TEXTS, text)}")
        held = worded or during.startswith("in step") or "lock" in during
        lease = (" (a lease this run could not release holds the next run up to "
                 "SPLICE_LOCK_LEASE_SECONDS, default 60)") if held else ""
        return f"{what.rstrip('. ')}. Run again once it answers. {RERUN_SAFE}{lease}"
    return None


def disk_full(folder: str, during: str) -> str:
    """The words of a full disk: which folder, how full, what to do."""
    import shutil

    try:
        usage = shutil.disk_usage(folder)
        room = f" ({_size(usage.free)} free of {_size(usage.total)})"
    except OSError:
        room = ""
    return (f"no space left on device {during}: the file system of {folder}{room} is full. "
            f"Free space there, or give the run room elsewhere (the warehouse: --warehouse; "
            f"Spark's scratch space: TMPDIR or spark.local.dir in SPLICE_SPARK_CONF), then "
            f"run again. {RERUN_SAFE}")


def _chain(err: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    todo: list[BaseException | None] = [err]
    while todo:
        e = todo.pop()
        if e is None or any(e is s for s in seen):
            continue
        seen.append(e)
        todo += [e.__cause__, e.__context__]
    return seen


def _during(err: BaseException) -> str:
    """The step ``err`` stopped, or what the run was doing."""
    step = getattr(err, "step", None)
    frames: list[Any] = []
    tb = err.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for frame in reversed(frames):
        found = frame.f_locals.get("step")
        if step is None and isinstance(found, StepBase):
            step = found
    if step is not None:
        return f"in step '{step.id}' ({step.op}, from {step.where})"
    for frame in reversed(frames):
        module = frame.f_globals.get("__name__", "")
        if module in _MODULE_WORDS:
            return f"while {_MODULE_WORDS[module]}"
    return "before any step ran"


def _full_folder(filename: Any, settings: Any) -> str:
    """The folder a full disk holds: the file's, when the OS named one;
    else, of the places a run writes, the one with the least room."""
    import os
    import shutil
    import tempfile

    if filename:
        folder = os.path.dirname(os.path.abspath(os.fsdecode(filename)))
        while folder and not os.path.isdir(folder):
            folder = os.path.dirname(folder)
        return folder
    places = [tempfile.gettempdir(), os.path.dirname(os.path.abspath(settings.spark_log))]
    if not _is_s3(settings.warehouse) and "://" not in settings.warehouse.removeprefix("file:"):
        places.insert(0, os.path.abspath(settings.warehouse.removeprefix("file:")))
    rooms = []
    for place in places:
        while place and not os.path.isdir(place):
            place = os.path.dirname(place)
        try:
            rooms.append((shutil.disk_usage(place).free, place))
        except OSError:
            continue
    return min(rooms)[1] if rooms else places[0]


def _size(n: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


def _is_s3(location: str) -> bool:
    return location.startswith(("s3a://", "s3://", "s3n://"))


def _s3_uri(text: str) -> str | None:
    found = re.search(r"s3[an]?://[^\s'\",\]\)]+", text)
    return found.group(0).rstrip(".:") if found else None


def _s3_endpoint(settings: Any) -> str:
    conf = settings.storage_conf()
    endpoint = settings.s3_endpoint or conf.get("spark.hadoop.fs.s3a.endpoint")
    return endpoint or "(AWS S3)"


def _kafka_bootstrap(pipeline: Any, settings: Any) -> str | None:
    """The brokers of the pipeline's Kafka sources and sinks (a statement's
    own, else the setting), None without one."""
    steps = getattr(pipeline, "steps", ())
    kafka = [s for s in steps if getattr(s, "format", None) == "kafka"]
    if not kafka:
        return None
    own = sorted({b for s in kafka if (b := s.options.get("bootstrap"))})
    return ", ".join(own) if own else settings.kafka_bootstrap or "(not set)"


def _short(err: BaseException, texts: tuple[str, ...], text: str) -> str:
    """One line of the fault: the root cause's, or the line naming it."""
    cause = root_cause(err).summary
    if any(t in cause for t in texts) or len(cause) < 200:
        return cause.splitlines()[0] if cause else type(err).__name__
    line = next((ln.strip() for ln in text.splitlines() if any(t in ln for t in texts)), cause)
    return _clip(line)

"""Case files: a pipeline, the data that arrives, and what must come out.

The format is the one of the acceptance cases (``tests/cases/README.md``):
``sql``; ``runs``, each appending rows to sources and then running the whole
pipeline once, optionally checking outputs; a final ``expect`` checked after
one more run with no new data; or an ``error`` the pipeline must be rejected
with. ``splice test`` runs them, each against a fresh temporary warehouse;
the project's own acceptance tests run the very same function.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Protocol

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from splice.engine import fs
from splice.sql.errors import SqlErrors
from splice.sql.plan import Kind, Pipeline, SourceStep, Step


class OutputExpect(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    rows: list[dict[str, Any]] | None = None
    state: list[dict[str, Any]] | None = None


class RunSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    append: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    expect: dict[str, OutputExpect] | None = None


class ErrorExpect(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    contains: list[str]
    line: int | None = None


class Case(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    case: str
    source: str | None = Field(default=None, alias="from")
    note: str | None = None
    sql: str
    runs: list[RunSpec] = Field(default_factory=list)
    expect: dict[str, OutputExpect] | None = None
    error: ErrorExpect | None = None


class CaseFileError(ValueError):
    """A case file that is not a case: YAML that does not parse, or fields
    missing or of the wrong shape. The message names the file and where."""


def load_case(path: str | Path) -> Case:
    with open(path) as fh:
        try:
            data = yaml.safe_load(fh)
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
            problem = getattr(err, "problem", None) or str(err)
            raise CaseFileError(f"{where}: not valid YAML: {problem}") from None
    if not isinstance(data, dict):
        raise CaseFileError(f"{path}: a case is a mapping of its fields (case, sql, runs, "
                            f"expect, error), not {type(data).__name__}")
    try:
        return Case.model_validate(data)
    except ValidationError as err:
        problems = []
        for e in err.errors():
            where = ".".join(str(part) for part in e["loc"]) or "the case"
            problems.append(f"'{where}' is missing" if e["type"] == "missing"
                            else f"'{where}': {e['msg']}")
        raise CaseFileError(f"{path}: {'; '.join(problems)}") from None


@dataclass
class CaseResult:
    name: str
    path: str
    passed: bool
    details: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def render(self) -> str:
        head = f"{'PASS' if self.passed else 'FAIL'} {self.name} ({self.seconds:.1f}s)"
        return "\n".join([head, *("  " + d for d in self.details)])


# -- running ------------------------------------------------------------------
class CaseSources(Protocol):
    """Where a case's sources live, when not on Delta tables (the default):
    ``prepare`` declares the compiled pipeline's sources there, ``append``
    delivers a run's rows, ``close`` removes what ``prepare`` made.
    ``kafka_bootstrap`` and ``schema_registry_url`` go to the run's
    Workspace settings."""

    kafka_bootstrap: str | None
    schema_registry_url: str | None

    def prepare(self, pipeline: Any, case: str) -> Any: ...

    def append(self, io: Any, step: SourceStep, rows: list[dict[str, Any]]) -> None: ...

    def close(self) -> None: ...

    def check(self, io: Any) -> list[str]:
        """What the run did otherwise than the Delta sources would have
        (records refused that Delta takes); checked after the last run."""
        ...


def run_case(case: Case, path: str, spark: Any, workdir: str | None = None,
             sources: CaseSources | None = None) -> CaseResult:
    """Run one case on a fresh warehouse; never raises for a failing case.
    ``sources``: the case's sources somewhere else than Delta tables (Kafka
    topics: ``splice.testing.kafka_cases``)."""
    from splice.runtime.compile import compile_text

    start = time.monotonic()
    file = os.path.basename(path) if path else f"{case.case}.sql"
    try:
        pipeline = compile_text(case.sql, file=file, name=_safe(case.case))
    except SqlErrors as err:
        return _result(case, path, start, _check_error(case, err))
    if case.error is not None:
        return _result(case, path, start, [
            f"expected the pipeline to be rejected (with {case.error.contains}), "
            "but it compiled"])
    root = workdir or tempfile.mkdtemp(prefix=f"splice-case-{_safe(case.case)}-")
    if sources is None:
        return _result(case, path, start, _run_data(case, pipeline, spark, root))
    try:
        pipeline = sources.prepare(pipeline, _safe(case.case))
        return _result(case, path, start, _run_data(case, pipeline, spark, root, sources))
    finally:
        sources.close()


def _result(case: Case, path: str, start: float, problems: list[str]) -> CaseResult:
    return CaseResult(case.case, path, not problems, problems, time.monotonic() - start)


def _check_error(case: Case, err: SqlErrors) -> list[str]:
    messages = [e.render() for e in err.errors]
    if case.error is None:
        return ["the pipeline was rejected:", *messages]
    for e in err.errors:
        text = e.render().lower()
        words_ok = all(w.lower() in text for w in case.error.contains)
        line_ok = case.error.line is None or e.position.line == case.error.line
        if words_ok and line_ok:
            return []
    want = f"an error holding {case.error.contains}"
    if case.error.line is not None:
        want += f" on line {case.error.line}"
    return [f"expected {want}; got:", *messages]


def _run_data(case: Case, pipeline: Pipeline, spark: Any, root: str,
              sources: CaseSources | None = None) -> list[str]:
    from splice.engine.definitions import DefinitionChanged
    from splice.engine.settings import SpliceSettings, Warehouse
    from splice.runtime.runner import StepFailed
    from splice.runtime.workspace import Workspace

    settings = SpliceSettings.from_env(
        kafka_bootstrap=sources.kafka_bootstrap if sources else None,
        schema_registry_url=sources.schema_registry_url if sources else None)
    workspace = Workspace(pipeline, settings, warehouse=Warehouse(root=root), spark=spark)
    io = workspace.io
    append = sources.append if sources else append_rows
    problems: list[str] = []
    try:
        for number, spec in enumerate(case.runs, start=1):
            for source_name, rows in spec.append.items():
                append(io, _source(pipeline, source_name), rows)
            workspace.run()
            if spec.expect:
                problems += check_outputs(io, spec.expect, f"after run {number}")
        workspace.run()
        if case.expect:
            problems += check_outputs(io, case.expect, "after the last run")
        if sources is not None:
            problems += sources.check(io)
    except (StepFailed, DefinitionChanged) as err:
        problems.append(str(err))
    except CaseDataError as err:
        problems.append(str(err))
    return problems


class CaseDataError(Exception):
    """The case itself is wrong: an unknown source or output name."""


def _source(pipeline: Pipeline, name: str) -> SourceStep:
    for source_name, step in pipeline.sources.items():
        if source_name.lower() == name.lower():
            return step
    raise CaseDataError(f"the case appends to '{name}', which the pipeline does not declare "
                        f"(its sources: {', '.join(pipeline.sources)})")


def check_outputs(io: Any, expect: dict[str, OutputExpect], when: str) -> list[str]:
    from splice.testing.compare import compare_rows

    outputs = {name.lower(): step for name, step in io.pipeline.outputs.items()}
    # Per expected output, in the case's order: a mistake of the case, or
    # the step whose table is compared.
    checks: dict[str, str | Step] = {}
    for name, wanted in expect.items():
        step = outputs.get(name.lower())
        if step is None:
            raise CaseDataError(f"the case expects output '{name}', which the pipeline does not "
                                f"write (its outputs: {', '.join(io.pipeline.outputs)})")
        if wanted.rows is not None and step.kind == Kind.TABLE:
            checks[name] = f"output '{name}' is a table: expect its 'state', not 'rows'"
        elif wanted.state is not None and step.kind == Kind.STREAM:
            checks[name] = f"output '{name}' is a stream: expect its 'rows', not 'state'"
        else:
            checks[name] = step

    def read(step: Step) -> tuple[list[str], list[dict[str, Any]]]:
        df = io.read_stored(step)
        return df.columns, [row.asDict(recursive=True) for row in df.collect()]

    # The tables are read side by side: planning a Delta read computes the
    # table's snapshot (Spark jobs), and one output need not wait for
    # another's (a 16-run case with three outputs: 75 against 81 s).
    steps = {name: check for name, check in checks.items() if not isinstance(check, str)}
    with ThreadPoolExecutor(max_workers=max(1, len(steps))) as pool:
        tables = dict(zip(steps, pool.map(read, steps.values()), strict=True))
    problems: list[str] = []
    for name, check in checks.items():
        if isinstance(check, str):
            problems.append(check)
            continue
        wanted, (columns, actual) = expect[name], tables[name]
        expected = wanted.rows if wanted.rows is not None else wanted.state or []
        result = compare_rows(expected, actual, columns)
        if not result.ok:
            what = "rows" if wanted.rows is not None else "state"
            problems.append(f"output '{name}' {when} ({what}):")
            problems += ["  " + p for p in result.problems]
    return problems


# -- appending ------------------------------------------------------------------
def append_rows(io: Any, step: SourceStep, rows: list[dict[str, Any]]) -> None:
    """Append rows to a source, as its producer would: a Delta commit, or a
    new JSON-lines file. Values keep the case's spelling for JSON (so a case
    can hold a record that does not fit the schema)."""
    path = io.warehouse.source_path(step.location)
    if step.format == "json":
        # Written under a name Spark's file source ignores, then renamed into
        # place: a reader sees the file whole or not at all. The name sorts by
        # time, so files of the same modification time keep their order.
        name = f"part-{time.time_ns():020d}-{uuid.uuid4().hex[:8]}.json"
        text = "".join(json.dumps(row, default=str) + "\n" for row in rows)
        folder = fs.local_path(path)
        if folder is None:  # an object store's put is whole or nothing already
            fs.write_text(io.spark, f"{path.rstrip('/')}/{name}", text)
            return
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f"_{name}.tmp"), "w") as fh:
            fh.write(text)
        os.replace(os.path.join(folder, f"_{name}.tmp"), os.path.join(folder, name))
        return
    from splice.operators.sources import declared_schema

    schema = declared_schema(step)
    check_columns(step, rows)
    converted = []
    for row in rows:
        lowered = {str(k).lower(): v for k, v in row.items()}
        converted.append(tuple(_python_value(lowered.get(c.name.lower()), c.type)
                               for c in step.declared))
    df = io.spark.createDataFrame(converted, schema).coalesce(1)
    df.write.format("delta").mode("append").save(path)


def check_columns(step: SourceStep, rows: list[dict[str, Any]]) -> None:
    """Refuse rows that name a column the source does not declare (in any
    case), whichever sources the case runs on."""
    declared = {c.name.lower() for c in step.declared}
    for row in rows:
        unknown = {str(k).lower() for k in row} - declared
        if unknown:
            raise CaseDataError(f"rows for '{step.name}' name unknown columns "
                                f"{', '.join(sorted(unknown))}")


def _python_value(value: Any, typ: str) -> Any:
    if value is None:
        return None
    if typ in ("timestamp", "timestamp_ntz"):
        if isinstance(value, str):
            value = dt.datetime.fromisoformat(value)
        if isinstance(value, dt.datetime) and value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return value
    if typ == "date":
        return dt.date.fromisoformat(value) if isinstance(value, str) else value
    if typ in ("int", "bigint", "smallint", "tinyint"):
        return int(value)
    if typ in ("double", "float"):
        return float(value)
    if typ.startswith("decimal"):
        return Decimal(str(value))
    if typ == "boolean":
        return bool(value)
    if typ == "string":
        return str(value)
    return value


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name)

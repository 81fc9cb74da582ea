"""The one compile function: SQL files in, the physical plan out (the
logical pipeline with every step's node, planned once).

``splice validate``, ``splice explain``, ``splice run``, ``splice test`` and
the Dagster definitions all compile pipelines here (``splice.runtime.compile`` is
the same functions, for the user's side).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TypeVar

from splice.engine.registry_schemas import RegistrySchemas
from splice.physical.base import PhysicalPlan
from splice.physical.planner import plan
from splice.sql.analyzer import Analyzer
from splice.sql.errors import SqlError, SqlErrors, position_in
from splice.sql.plan import Pipeline
from splice.sql.script import parse_partial
from splice.sql.value_schemas import SchemaLookup

P = TypeVar("P", bound=Pipeline)


class PipelineFiles:
    """The .sql files of one pipeline: a file, or every .sql file of a folder
    in name order."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if self.path.is_dir():
            self.files = sorted(self.path.glob("*.sql"))
        else:
            self.files = [self.path]
        self.name = pipeline_name(self.path)


def pipeline_name(path: Path) -> str:
    stem = path.name if path.is_dir() else path.stem
    return re.sub(r"[^A-Za-z0-9_]", "_", stem) or "pipeline"


def compile_text(text: str, file: str, name: str,
                 schemas: SchemaLookup | None = None) -> PhysicalPlan:
    return compile_sources([(file, text)], name, schemas)


def analyze_sources(sources: list[tuple[str, str]], name: str,
                    schemas: SchemaLookup | None = None) -> Pipeline:
    """Parse and analyze a pipeline's files into its logical plan, without
    asking whether the engine can run every step (the front end alone: the
    planner's tests, EXPLAIN of what is not runnable yet). Every error found
    is raised together as :class:`SqlErrors`, in the order of the files and
    their lines: a statement that does not parse is reported, and the
    statements that do are analyzed all the same (a reader of a name such a
    statement declares is not reported again). ``schemas``: the schema
    registry's, for sources of Avro values (default: the registry the
    settings name, asked only if such a source is declared)."""
    analyzer = Analyzer(name, schemas if schemas is not None else RegistrySchemas())
    scripts = [(file, text, parse_partial(text, file)) for file, text in sources]
    for _, _, script in scripts:
        analyzer.broken |= script.unparsed_names
        analyzer.unresolved = analyzer.unresolved or script.unnamed
    for file, text, script in scripts:
        analyzer.add(script.statements, text, file)
    errors = [e for _, _, script in scripts for e in script.errors] + analyzer.errors
    if errors:
        order = {file: n for n, (file, _) in enumerate(sources)}
        raise SqlErrors(sorted(errors, key=lambda e: (order.get(e.position.file, len(order)),
                                                      e.position.line, e.position.col)))
    return analyzer.finish()


def compile_sources(sources: list[tuple[str, str]], name: str,
                    schemas: SchemaLookup | None = None) -> PhysicalPlan:
    """Parse, analyze and plan a pipeline's files; every error found (a
    step the engine cannot run is a positioned error of the planner) is
    raised together as :class:`SqlErrors`."""
    return plan(analyze_sources(sources, name, schemas))


def _read(path: str | Path) -> tuple[list[tuple[str, str]], str]:
    files = PipelineFiles(path)
    if not files.files:
        raise FileNotFoundError(f"no .sql files in {files.path}")
    sources: list[tuple[str, str]] = []
    errors: list[SqlError] = []
    for f in files.files:
        try:
            sources.append((str(f), decode_sql(f.read_bytes(), str(f))))
        except SqlError as err:
            errors.append(err)
    if errors:
        raise SqlErrors(errors)
    return sources, files.name


def decode_sql(data: bytes, file: str) -> str:
    """A SQL file's text: UTF-8, a leading byte order mark dropped (editors
    on Windows write one). Any other encoding is a positioned error at the
    first byte that is not UTF-8."""
    data = data.removeprefix(b"\xef\xbb\xbf")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        before = data[:err.start].decode("utf-8")
        raise SqlError(position_in(before, len(before), file),
                       f"the file is not UTF-8 (byte 0x{data[err.start]:02x} here is not "
                       "valid UTF-8)", "save it as UTF-8") from None


def compile_path(path: str | Path, schemas: SchemaLookup | None = None) -> PhysicalPlan:
    """A pipeline the engine can run, or every reason it cannot."""
    return _with_origin(compile_sources(*_read(path), schemas), path)


def analyze_path(path: str | Path, schemas: SchemaLookup | None = None) -> Pipeline:
    """A pipeline's logical plan, runnable or not (for EXPLAIN)."""
    return _with_origin(analyze_sources(*_read(path), schemas), path)


def _with_origin(pipeline: P, path: str | Path) -> P:
    return pipeline.model_copy(update={"origin": str(Path(path).resolve())})


def discover(folder: Path) -> list[Path]:
    """The pipelines of a folder: its sub-folders holding .sql files, and
    its own .sql files (one pipeline each)."""
    return sorted(p for p in folder.iterdir()
                  if (p.is_dir() and any(p.glob("*.sql"))) or p.suffix == ".sql")


def pipeline_paths(path: str | Path) -> list[Path]:
    """A .sql file is one pipeline; a folder with sub-folders holding .sql
    files is a folder of pipelines (those sub-folders and its own .sql
    files, one pipeline each), as the Dagster definitions load
    ``pipelines/``; any other folder of .sql files is one pipeline. A path
    with none is FileNotFoundError."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such pipeline file or folder")
    nested = path.is_dir() and any(p.is_dir() and any(p.glob("*.sql"))
                                   for p in path.iterdir())
    if not path.is_dir() or (not nested and any(path.glob("*.sql"))):
        return [path]
    found = discover(path)
    if not found:
        raise FileNotFoundError(f"no .sql files in {path}, nor in a folder under it")
    return found

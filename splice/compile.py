"""The one compile function: SQL files in, a checked logical plan out.

``splice validate``, ``splice explain``, ``splice run``, ``splice test`` and
the Dagster definitions all compile pipelines here.
"""

from __future__ import annotations

import re
from pathlib import Path

from joins.planner import physical_join
from sql.analyzer import Analyzer
from sql.errors import SqlError, SqlErrors
from sql.plan import JoinStep, Pipeline
from sql.script import parse_script


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


def compile_text(text: str, file: str, name: str) -> Pipeline:
    return compile_sources([(file, text)], name)


def compile_sources(sources: list[tuple[str, str]], name: str) -> Pipeline:
    """Parse, analyze and plan the joins of a pipeline's files; every error
    found is raised together as :class:`SqlErrors`."""
    analyzer = Analyzer(name)
    errors: list[SqlError] = []
    for file, text in sources:
        try:
            statements = parse_script(text, file)
        except SqlErrors as err:
            errors.extend(err.errors)
            continue
        analyzer.add(statements, text, file)
    errors.extend(analyzer.errors)
    if errors:
        raise SqlErrors(errors)
    pipeline = analyzer.finish()
    for step in pipeline.steps:
        if isinstance(step, JoinStep):
            try:
                physical_join(step)
            except SqlError as err:
                errors.append(err)
    if errors:
        raise SqlErrors(errors)
    return pipeline


def compile_path(path: str | Path) -> Pipeline:
    files = PipelineFiles(path)
    if not files.files:
        raise FileNotFoundError(f"no .sql files in {files.path}")
    sources = [(str(f), f.read_text()) for f in files.files]
    return compile_sources(sources, files.name)

"""What every part of the analyzer shares: the steps and names of the
pipeline so far, and the statement being analyzed (for positions and step
provenance)."""

from __future__ import annotations

from dataclasses import dataclass

from splice.sql import expressions
from splice.sql.errors import Position, SqlError
from splice.sql.intervals import parse_duration_ms
from splice.sql.names import check_step_id
from splice.sql.plan import Kind, Step
from splice.sql.script import ParsedStatement, node_position
from splice.sql.value_schemas import SchemaLookup
from sqlglot import exp


@dataclass
class CurrentStatement:
    """The statement being analyzed: for positions and step provenance."""

    parsed: ParsedStatement
    text: str  # the whole file's text
    file: str

    @property
    def where(self) -> Position:
        """Where the statement starts: the provenance of its steps."""
        return self.parsed.position

    def pos(self, node: exp.Expression | None) -> Position:
        if node is None:
            return self.parsed.position
        return node_position(node, self.text, self.file, self.parsed.position)


class Skip(Exception):
    """A statement reads a name whose own statement was rejected: its error
    has been reported already, so this one is skipped silently."""


class AnalyzerBase:
    """The state of the analysis of one pipeline, statement after statement."""

    def __init__(self, name: str, schemas: SchemaLookup | None = None) -> None:
        self.name = name
        # The schema registry's schemas, for a source whose values are Avro
        # (splice.sql.value_schemas); None: no registry is set.
        self.schemas = schemas
        self.steps: list[Step] = []
        self.names: dict[str, str] = {}  # a name usable in FROM -> step id
        self.broken: set[str] = set()  # names whose statement was rejected
        # A statement that did not parse declared a name its tokens do not
        # show: any unknown name may be that one.
        self.unresolved = False
        self.settings: dict[str, str] = {}
        self.errors: list[SqlError] = []
        self.explained: list[str] = []
        self._stmt: CurrentStatement | None = None

    @property
    def stmt(self) -> CurrentStatement:
        assert self._stmt is not None
        return self._stmt

    def _claim(self, name: str, node: exp.Expression) -> str:
        """Reserve ``name`` for a new relation; its step id is the name."""
        if name.lower() in self.names:
            raise SqlError(self.stmt.pos(node), f"'{name}' is already defined in this pipeline",
                           "give the new source or step another name")
        return self._fresh_id(name)

    def _fresh_id(self, base: str) -> str:
        taken = {s.id.lower() for s in self.steps} | set(self.names)
        candidate, n = base, 2
        while candidate.lower() in taken:
            candidate, n = f"{base}_{n}", n + 1
        return candidate

    def _lookup(self, table: exp.Table) -> Step:
        name = expressions.table_name(table)
        step_id = self.names.get(name.lower())
        if step_id is None:
            if name.lower() in self.broken or self.unresolved:
                raise Skip()
            known = ", ".join(sorted(self.names_display())) or "none yet"
            raise SqlError(self.stmt.pos(table), f"unknown source or step '{name}'",
                           f"declare it first with CREATE STREAM/TABLE/SOURCE or WITH; "
                           f"known names: {known}")
        return next(s for s in self.steps if s.id == step_id)

    def names_display(self) -> list[str]:
        return [s.id for s in self.steps if s.id.lower() in self.names]

    def _add(self, step: Step, name: str | None = None) -> Step:
        check_step_id(step.id, self.stmt.pos(None))
        self.steps.append(step)
        if name is not None:
            self.names[name.lower()] = step.id
        return step

    def _setting_ms(self, name: str) -> int | None:
        value = self.settings.get(name)
        return parse_duration_ms(value) if value is not None else None


def quote(name: str) -> str:
    """A column name as a Spark SQL identifier."""
    return "`" + name.replace("`", "``") + "`"


def name_of(node: exp.Expression) -> str:
    """The name a statement's target or a table stands for."""
    if isinstance(node, exp.Table):
        return expressions.table_name(node)
    return node.name


def declared_kind(select: exp.Select) -> Kind | None:
    """The kind a query asks for with ``SELECT STREAM`` / ``SELECT TABLE``."""
    word = (select.args.get("result_kind") or "").upper()
    return {"STREAM": Kind.STREAM, "TABLE": Kind.TABLE}.get(word)

"""The driver: each statement of a pipeline in order, and SET.

Sources declare relations; ``SET`` changes settings for the statements after
it; every query statement (``WITH``, ``INSERT INTO``, ``CREATE ... AS``)
becomes one or more steps. A rejected statement's error is collected and the
analysis goes on with the next one.
"""

from __future__ import annotations

from typing import Self

from splice.sql import expressions
from splice.sql.analysis.base import AnalyzerBase, CurrentStatement, name_of
from splice.sql.errors import SqlError, SqlErrors
from splice.sql.intervals import parse_duration_ms
from splice.sql.limits import FIX_TEXT, too_long, too_long_rule
from splice.sql.names import check_name
from splice.sql.plan import Kind, Pipeline
from splice.sql.script import ParsedStatement, nesting_error
from sqlglot import exp

# Settings that change what Splice does, and the Lenses / ksqlDB settings that
# are accepted because they have no meaning on a lakehouse.
SETTINGS = {"join.grace.period", "join.late.match.retention"}
ACCEPTED_SETTINGS = {"defaults.topic.autocreate", "auto.offset.reset",
                     "processing.guarantee", "commit.interval.ms"}

_NAME_OF = {expressions.CreateSource: "source name", expressions.WithStep: "step name",
            expressions.InsertInto: "output name", expressions.CreateAs: "output name"}


class StatementAnalyzer(AnalyzerBase):
    """Statements in order; the kinds of statement are analyzed by the other
    parts (sources, queries)."""

    def add(self, statements: list[ParsedStatement], text: str, file: str) -> None:
        for parsed in statements:
            self._stmt = CurrentStatement(parsed, text, file)
            try:
                self._statement(parsed.node)
            except (SqlError, RecursionError) as err:
                # RecursionError: the backstop of sql.depth (never a traceback)
                err = err if isinstance(err, SqlError) else nesting_error(parsed.position, None)
                self.errors.append(err)
                name = _declared_name(parsed.node)
                if name:
                    self.broken.add(name.lower())

    def fork(self) -> Self:
        """An independent copy of this analyzer as it stands, to analyze
        different next statements from the same state (the fuzz test does,
        thousands of times)."""
        twin = type(self)(self.name)
        twin.steps = list(self.steps)
        twin.names = dict(self.names)
        twin.broken = set(self.broken)
        twin.unresolved = self.unresolved
        twin.settings = dict(self.settings)
        twin.errors = list(self.errors)
        twin.explained = list(self.explained)
        return twin

    def finish(self) -> Pipeline:
        if self.errors:
            raise SqlErrors(self.errors)
        return Pipeline(name=self.name, steps=tuple(self.steps), explain=tuple(self.explained))

    def _statement(self, node: exp.Expression) -> None:
        if isinstance(node, (expressions.CreateSource, expressions.WithStep, expressions.InsertInto,
                             expressions.CreateAs)):
            check_name(name_of(node.this), self.stmt.pos(node.this), _NAME_OF[type(node)])
        if isinstance(node, expressions.Explain):
            before = len(self.steps)
            self._statement(node.this)
            self.explained.extend(s.id for s in self.steps[before:])
        elif isinstance(node, expressions.CreateSource):
            self._source(node)
        elif isinstance(node, expressions.SetOption):
            self._set(node)
        elif isinstance(node, expressions.WithStep):
            self._query(node.this.name, node.expression, output=None, forced=None)
        elif isinstance(node, expressions.InsertInto):
            self._query(name_of(node.this), node.expression, output=name_of(node.this), forced=None)
        elif isinstance(node, expressions.CreateAs):
            kind = node.args["kind"].upper()
            forced = {"STREAM": Kind.STREAM, "TABLE": Kind.TABLE}.get(kind)
            final = self._query(name_of(node.this), node.expression,
                                output=name_of(node.this), forced=forced)
            if node.args.get("options") is not None:
                # Checked even when the query was skipped (it reads a rejected
                # statement's name): the sink's options are this statement's own.
                # A skipped query's kind is unknown without CREATE STREAM|TABLE:
                # a table's options are the wider set, so none is refused wrongly.
                kind = final.kind if final is not None else forced or Kind.TABLE
                self._sink(node, kind, final)
        else:  # the parser admits only the statement types above
            raise SqlError(self.stmt.pos(node), "this statement cannot be part of a pipeline",
                           "use CREATE STREAM/TABLE/SOURCE, WITH, INSERT INTO, CREATE ... AS, "
                           "SET or EXPLAIN")

    def _set(self, node: expressions.SetOption) -> None:
        name = str(node.this).lower()
        value_node = node.expression
        value = value_node.name if isinstance(value_node, exp.Expression) else str(value_node)
        pos = self.stmt.pos(node)
        if name in ACCEPTED_SETTINGS:
            return
        if name not in SETTINGS:
            raise SqlError(pos, f"unknown setting '{name}'",
                           f"Splice knows {', '.join(sorted(SETTINGS | ACCEPTED_SETTINGS))}")
        ms = parse_duration_ms(value)
        if ms is None:
            raise SqlError(pos, f"setting '{name}' needs a duration, not '{value}'",
                           f"write for example SET {name} = '1 MINUTE';")
        if too_long(ms):
            raise SqlError(self.stmt.pos(value_node) if isinstance(value_node, exp.Expression)
                           else pos, f"setting '{name}': " + too_long_rule(f"'{value}'"),
                           FIX_TEXT)
        self.settings[name] = value


def _declared_name(node: exp.Expression) -> str | None:
    if isinstance(node, expressions.Explain):
        return _declared_name(node.this)
    if (isinstance(node, expressions.STATEMENT_TYPES)
            and not isinstance(node, expressions.SetOption)):
        target = node.this
        return name_of(target) if isinstance(target, exp.Expression) else None
    return None

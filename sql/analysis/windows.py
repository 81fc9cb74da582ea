"""RisingWave's window-function inputs, ``TUMBLE(s, ts, size)`` and
``HOP(s, ts, slide, size)``: the stream with ``window_start`` and
``window_end`` columns, from a projection step."""

from __future__ import annotations

from splice.sql import expressions
from splice.sql.analysis.base import AnalyzerBase, quote
from splice.sql.columns import ROWTIME
from splice.sql.errors import SqlError
from splice.sql.plan import ColumnSpec, Kind, Projection, ProjectStep, Step
from splice.sql.scope import Input, WindowedBy, plain_view
from splice.sql.windows import WINDOW_END, WINDOW_START
from sqlglot import exp


class WindowTableAnalyzer(AnalyzerBase):
    """TUMBLE and HOP in FROM."""

    def _windowed_input(self, node: expressions.WindowTable, side: str) -> Input:
        """``TUMBLE(s, ts, size)`` / ``HOP(s, ts, slide, size)``: ``s`` with
        the columns ``window_start`` and ``window_end``, from a projection step
        (HOP gives one row per window a record falls in)."""
        pos = self.stmt.pos(node)
        kind = str(node.args["kind"]).upper()
        table = node.this
        if not isinstance(table, exp.Table):
            raise SqlError(pos, f"{kind} reads a stream by name", f"write {kind}(stream, ...)")
        base = self._input(table, side)
        if base.relation.kind != Kind.STREAM:
            raise SqlError(pos, f"{kind} windows a stream, and '{base.alias}' is a table",
                           f"apply {kind} to the stream the table is read from")
        if table.args.get("stream_window") is not None:
            raise SqlError(pos, f"a stream inside {kind}(...) cannot also have OVER (...)",
                           "drop the OVER clause")
        self._check_window_time(node, base, kind)
        size = node.args["size"].millis
        slide = node.args["slide"].millis if node.args.get("slide") is not None else None
        if size <= 0 or (slide is not None and slide <= 0):
            raise SqlError(pos, f"a {kind} window must last longer than zero",
                           "give the window a size (and slide) of at least 1 millisecond")
        for column in (WINDOW_START, WINDOW_END):
            if base.relation.column(column) is not None:
                raise SqlError(pos, f"'{base.alias}' already has a column '{column}', which "
                               f"{kind} adds", "rename that column in a WITH step first")
        spec = f"'{size} milliseconds'" + (f", '{slide} milliseconds'" if slide else "")
        window_sql = f"window({ROWTIME}, {spec})"
        select = tuple([
            *(Projection(name=c.name, expr=quote(c.name)) for c in base.relation.columns),
            Projection(name=WINDOW_START, expr=f"{window_sql}.start"),
            Projection(name=WINDOW_END, expr=f"{window_sql}.end"),
        ])
        relation = base.relation.model_copy(update={"columns": (
            *base.relation.columns,
            ColumnSpec(name=WINDOW_START, type="timestamp", nullable=False),
            ColumnSpec(name=WINDOW_END, type="timestamp", nullable=False))})
        existing = next((s for s in self.steps if isinstance(s, ProjectStep)
                         and s.inputs == (base.step_id,) and s.select == select
                         and s.filter is None and s.key is None), None)
        step: Step = existing or self._add(ProjectStep(
            id=self._fresh_id(f"{base.step_id}_{kind.lower()}"), inputs=(base.step_id,),
            relation=relation, where=self.stmt.where, sql=self.stmt.parsed.text,
            select=select))
        alias = node.alias or base.alias
        return Input(side=side, step_id=step.id, relation=step.relation,
                     views=[plain_view(alias, step.relation)], position=pos, node=table,
                     windowed=WindowedBy(kind=kind, size_ms=size, slide_ms=slide, position=pos))

    def _check_window_time(self, node: expressions.WindowTable, base: Input, kind: str) -> None:
        """The time column of TUMBLE / HOP must be the stream's event time:
        windows close as event time passes them."""
        column = node.args["column"]
        name = column.name if isinstance(column, exp.Column) else ""
        time_column = base.relation.time_column
        if name.upper() == ROWTIME or (time_column and name.lower() == time_column.lower()):
            return
        pos = self.stmt.pos(column)
        event_time = f"'{time_column}' (or ROWTIME)" if time_column else "ROWTIME"
        if base.relation.column(name) is None:
            raise SqlError(pos, f"unknown column '{name}' in '{base.alias}'",
                           f"window by its event time, {event_time}")
        raise SqlError(pos, f"{kind} windows '{base.alias}' by '{name}', which is not its "
                       f"event time: a window must close as event time passes it",
                       f"window by {event_time}, or declare '{name}' as the source's "
                       "timestamp (WITH (timestamp='...')) or WATERMARK")

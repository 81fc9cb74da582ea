"""From parsed statements to the logical plan.

The analyzer walks a pipeline's statements in order. Sources declare
relations; ``SET`` changes settings for the statements after it; every query
statement (``WITH``, ``INSERT INTO``, ``CREATE ... AS``) becomes one or more
steps: a projection, a table materialization, a repartition, a join per
stage of a chain. Every rule of the language that can be checked without
data is checked here, and a broken rule is a positioned :class:`SqlError`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sqlglot import exp

from sql import nodes
from sql.aggregate import AggregateBuilder, find_aggregate, reject_aggregate
from sql.asof import asof_inequality, check_asof_join
from sql.conditions import SplitCondition, and_all, conjuncts, split_on
from sql.errors import Position, SqlError, SqlErrors
from sql.intervals import interval_ms, parse_duration_ms
from sql.names import check_location, check_name, check_step_id
from sql.plan import (
    AggregateStep,
    ColumnSpec,
    Equality,
    JoinStep,
    JoinType,
    Kind,
    MaterializeStep,
    Pipeline,
    Projection,
    ProjectStep,
    Relation,
    RepartitionStep,
    SourceStep,
    Step,
    Where,
    Window,
)
from sql.projection import ProjectionBuilder, ProjectionResult
from sql.scope import KEY, ROWTIME, AliasView, Compiled, Input, Scope, WindowedBy, plain_view
from sql.script import ParsedStatement, node_position
from sql.select_rules import check_select
from sql.table_keys import table_join_key
from sql.types import UNKNOWN, same_type_family, spark_type, struct_type
from sql.windows import WINDOW_END, WINDOW_START, reject_window_clauses, stream_stream_window

SOURCE_OPTIONS = {"location", "format", "key", "timestamp", "changelog"}
SOURCE_FORMATS = {"delta", "json", "csv", "parquet"}

# Settings that change what Splice does, and the Lenses / ksqlDB settings that
# are accepted because they have no meaning on a lakehouse.
SETTINGS = {"join.grace.period", "join.late.match.retention"}
ACCEPTED_SETTINGS = {"defaults.topic.autocreate", "auto.offset.reset",
                     "processing.guarantee", "commit.interval.ms"}

# Which inputs may join, and with which join types (LANGUAGE.md, section 2).
COMPATIBLE: dict[tuple[Kind, Kind], set[JoinType]] = {
    (Kind.STREAM, Kind.STREAM): set(JoinType),
    (Kind.TABLE, Kind.TABLE): set(JoinType),
    (Kind.STREAM, Kind.TABLE): {JoinType.INNER, JoinType.LEFT},
    (Kind.TABLE, Kind.STREAM): {JoinType.INNER, JoinType.RIGHT},
}


_NAME_OF = {nodes.CreateSource: "source name", nodes.WithStep: "step name",
            nodes.InsertInto: "output name", nodes.CreateAs: "output name"}


def result_kind(left: Kind, right: Kind) -> Kind:
    return Kind.TABLE if left == right == Kind.TABLE else Kind.STREAM


@dataclass
class _Statement:
    """The statement being analyzed: for positions and step provenance."""

    parsed: ParsedStatement
    text: str  # the whole file's text
    file: str

    @property
    def where(self) -> Where:
        p = self.parsed.position
        return Where(file=p.file, line=p.line, col=p.col)

    def pos(self, node: exp.Expression | None) -> Position:
        if node is None:
            return self.parsed.position
        return node_position(node, self.text, self.file, self.parsed.position)


@dataclass
class _Shape:
    """What a join step projects and filters: the statement's own WHERE and
    projections for its last stage, ``*`` for a stage whose result a later
    step reads."""

    where: exp.Expression | None = None
    items: list[exp.Expression] | None = None
    declared: Kind | None = None


class Analyzer:
    """Analyzes the statements of one pipeline, in order."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.steps: list[Step] = []
        self.names: dict[str, str] = {}  # a name usable in FROM -> step id
        self.broken: set[str] = set()  # names whose statement was rejected
        self.settings: dict[str, str] = {}
        self.errors: list[SqlError] = []
        self.explained: list[str] = []
        self._stmt: _Statement | None = None

    # -- driver -------------------------------------------------------------
    def add(self, statements: list[ParsedStatement], text: str, file: str) -> None:
        for parsed in statements:
            self._stmt = _Statement(parsed, text, file)
            try:
                self._statement(parsed.node)
            except SqlError as err:
                self.errors.append(err)
                name = _declared_name(parsed.node)
                if name:
                    self.broken.add(name.lower())

    def fork(self) -> Analyzer:
        """An independent copy of this analyzer as it stands, to analyze
        different next statements from the same state (the fuzz test does,
        thousands of times)."""
        twin = Analyzer(self.name)
        twin.steps = list(self.steps)
        twin.names = dict(self.names)
        twin.broken = set(self.broken)
        twin.settings = dict(self.settings)
        twin.errors = list(self.errors)
        twin.explained = list(self.explained)
        return twin

    def finish(self) -> Pipeline:
        if self.errors:
            raise SqlErrors(self.errors)
        return Pipeline(name=self.name, steps=tuple(self.steps), explain=tuple(self.explained))

    @property
    def stmt(self) -> _Statement:
        assert self._stmt is not None
        return self._stmt

    def _statement(self, node: exp.Expression) -> None:
        if isinstance(node, (nodes.CreateSource, nodes.WithStep, nodes.InsertInto,
                             nodes.CreateAs)):
            check_name(_name(node.this), self.stmt.pos(node.this), _NAME_OF[type(node)])
        if isinstance(node, nodes.Explain):
            before = len(self.steps)
            self._statement(node.this)
            self.explained.extend(s.id for s in self.steps[before:])
        elif isinstance(node, nodes.CreateSource):
            self._source(node)
        elif isinstance(node, nodes.SetOption):
            self._set(node)
        elif isinstance(node, nodes.WithStep):
            self._query(node.this.name, node.expression, output=None, forced=None)
        elif isinstance(node, nodes.InsertInto):
            self._query(_name(node.this), node.expression, output=_name(node.this), forced=None)
        elif isinstance(node, nodes.CreateAs):
            kind = node.args["kind"].upper()
            forced = {"STREAM": Kind.STREAM, "TABLE": Kind.TABLE}.get(kind)
            self._query(_name(node.this), node.expression, output=_name(node.this),
                        forced=forced)
        else:  # the parser admits only the statement types above
            raise SqlError(self.stmt.pos(node), "this statement cannot be part of a pipeline",
                           "use CREATE STREAM/TABLE/SOURCE, WITH, INSERT INTO, CREATE ... AS, "
                           "SET or EXPLAIN")

    # -- names --------------------------------------------------------------
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
        name = nodes.table_name(table)
        step_id = self.names.get(name.lower())
        if step_id is None:
            if name.lower() in self.broken:
                raise _Skip()
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

    # -- SET ----------------------------------------------------------------
    def _set(self, node: nodes.SetOption) -> None:
        name = str(node.this).lower()
        value_node = node.expression
        value = value_node.name if isinstance(value_node, exp.Expression) else str(value_node)
        pos = self.stmt.pos(node)
        if name in ACCEPTED_SETTINGS:
            return
        if name not in SETTINGS:
            raise SqlError(pos, f"unknown setting '{name}'",
                           f"Splice knows {', '.join(sorted(SETTINGS | ACCEPTED_SETTINGS))}")
        if parse_duration_ms(value) is None:
            raise SqlError(pos, f"setting '{name}' needs a duration, not '{value}'",
                           f"write for example SET {name} = '1 MINUTE';")
        self.settings[name] = value

    def _setting_ms(self, name: str) -> int | None:
        value = self.settings.get(name)
        return parse_duration_ms(value) if value is not None else None

    # -- sources ------------------------------------------------------------
    def _source(self, node: nodes.CreateSource) -> None:
        name = _name(node.this)
        kind_word = node.args["kind"].upper()
        pos = self.stmt.pos(node)
        options = self._options(node)
        if "location" in options:
            check_location(options["location"], self._option_pos(node, "location"))
        columns = [
            ColumnSpec(name=c.name, type=spark_type(c.args["kind"]) if c.args.get("kind")
                       else "string", nullable=not _declared_not_null(c))
            for c in node.expressions
        ]
        by_lower = {c.name.lower(): c for c in columns}
        if len(by_lower) != len(columns):
            raise SqlError(pos, f"'{name}' declares a column twice",
                           "give every column its own name")
        keys = [k.strip() for k in options.get("key", "").split(",") if k.strip()]
        for k in keys:
            if k.lower() not in by_lower:
                raise SqlError(pos, f"key column '{k}' of '{name}' is not one of its columns",
                               f"declare it, or key by one of: {', '.join(by_lower)}")
        keys = [by_lower[k.lower()].name for k in keys]
        watermark = node.args.get("watermark")
        ts = options.get("timestamp")
        watermark_ms = None
        if watermark is not None:
            ts = ts or watermark.this.name
            watermark_ms = self._watermark_ms(watermark)
        if ts is not None:
            col = by_lower.get(ts.lower())
            if col is None:
                raise SqlError(pos, f"timestamp column '{ts}' of '{name}' is not one of its "
                               "columns", f"declare it, or use one of: {', '.join(by_lower)}")
            if col.type not in {"timestamp", "timestamp_ntz", "date", "bigint"}:
                raise SqlError(pos, f"timestamp column '{ts}' is {col.type.upper()}",
                               "the event time must be a TIMESTAMP, a DATE, or a BIGINT of "
                               "epoch milliseconds")
            ts = col.name
        fmt = options.get("format", "delta").lower()
        if fmt not in SOURCE_FORMATS:
            raise SqlError(pos, f"format '{fmt}' is not supported",
                           f"use one of: {', '.join(sorted(SOURCE_FORMATS))}")
        changelog = options.get("changelog", "true").lower() not in {"false", "0", "no"}
        if kind_word != "TABLE" and "changelog" in options:
            raise SqlError(pos, "only a CREATE TABLE source can say changelog",
                           "drop the changelog option")
        if not changelog:
            raise SqlError(pos, "a keyed table source with changelog=false is not supported yet",
                           "declare the table's changelog (append-only) as the source instead")
        if len(keys) == 1:
            key_type = by_lower[keys[0].lower()].type
        elif keys:
            key_type = struct_type([(k, by_lower[k.lower()].type) for k in keys])
        else:
            key_type = "string"
        step_id = self._claim(name, node.this)
        relation = Relation(kind=Kind.STREAM, key_type=key_type, columns=tuple(columns),
                            key_columns=tuple(keys), time_column=ts, watermark_ms=watermark_ms)
        source = SourceStep(
            id=step_id, relation=relation, where=self.stmt.where, sql=self.stmt.parsed.text,
            name=name, location=options.get("location", name), format=fmt,
            declared=tuple(columns), timestamp_column=ts, watermark_ms=watermark_ms,
            changelog=changelog,
            options={k: v for k, v in options.items() if k not in SOURCE_OPTIONS},
        )
        if kind_word != "TABLE":
            self._add(source, name)
            return
        if not keys:
            raise SqlError(pos, f"table '{name}' has no key",
                           "a table is read by key: add WITH (key='column')")
        self._add(source)
        table_id = self._fresh_id(f"{name}_table")
        tombstone = tuple(c.name for c in columns if c.name not in keys and c.name != ts)
        self._add(MaterializeStep(
            id=table_id, inputs=(source.id,), where=self.stmt.where, sql=self.stmt.parsed.text,
            relation=relation.model_copy(update={"kind": Kind.TABLE}),
            tombstone_columns=tombstone,
        ), name)

    def _options(self, node: nodes.CreateSource) -> dict[str, str]:
        out: dict[str, str] = {}
        for prop in node.args.get("options") or []:
            key = prop.name.lower()
            value = prop.args.get("value")
            out[key] = value.name if isinstance(value, exp.Expression) else str(value)
        return out

    def _option_pos(self, node: nodes.CreateSource, key: str) -> Position:
        prop = [p for p in node.args.get("options") or [] if p.name.lower() == key][-1]
        return self.stmt.pos(prop.args.get("value") or prop)

    def _watermark_ms(self, watermark: nodes.Watermark) -> int:
        expr = watermark.expression
        column = watermark.this.name.lower()
        if isinstance(expr, exp.Column) and expr.name.lower() == column:
            return 0
        if (isinstance(expr, exp.Sub) and isinstance(expr.this, exp.Column)
                and expr.this.name.lower() == column):
            ms = interval_ms(expr.expression)
            if ms is not None:
                return ms
        raise SqlError(self.stmt.pos(watermark), "a watermark must be 'ts - INTERVAL ...'",
                       f"write WATERMARK FOR {column} AS {column} - INTERVAL '20' SECOND")

    # -- queries ------------------------------------------------------------
    def _query(self, name: str, select: exp.Expression, output: str | None,
               forced: Kind | None) -> None:
        try:
            step_id = self._claim(name, select)
            if not isinstance(select, exp.Select):
                raise SqlError(self.stmt.pos(select), "a step must be a single SELECT",
                               "write the query as SELECT ... FROM ...")
            check_select(select, self.stmt.pos)
            joins = select.args.get("joins") or []
            grouped = _is_grouped(select)
            if joins:
                final = self._joins(select, joins, step_id, output, forced, grouped)
            else:
                final = self._single(select, step_id, output, forced, grouped)
            self.names[name.lower()] = final.id
        except _Skip:
            self.broken.add(name.lower())

    def _input(self, node: exp.Expression, side: str) -> Input:
        if isinstance(node, nodes.WindowTable):
            return self._windowed_input(node, side)
        if not isinstance(node, exp.Table):
            raise SqlError(self.stmt.pos(node), "only sources and named steps may be read here",
                           "name the subquery with WITH name AS (SELECT ...); and read it")
        step = self._lookup(node)
        alias = node.alias or nodes.table_name(node).split(".")[-1]
        return Input(side=side, step_id=step.id, relation=step.relation,
                     views=[plain_view(alias, step.relation)], position=self.stmt.pos(node),
                     node=node)

    def _windowed_input(self, node: nodes.WindowTable, side: str) -> Input:
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

    def _check_window_time(self, node: nodes.WindowTable, base: Input, kind: str) -> None:
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

    def _single(self, select: exp.Select, step_id: str, output: str | None,
                forced: Kind | None, grouped: bool) -> Step:
        source = select.args["from_"].this
        inp = self._input(source, "t")
        self._no_stream_window(inp)
        where = self.stmt.pos(select)
        if grouped:
            return self._aggregate(select, inp, step_id, output, forced)
        scope = Scope([inp], self.stmt.file, self.stmt.text)
        wanted = _declared_kind(select) or forced or inp.relation.kind
        if inp.relation.kind == Kind.TABLE:
            raise SqlError(where, f"reading the table '{inp.alias}' in a single-input query is "
                           "not supported yet", "join it, or read its source stream instead")
        filter_sql = None
        if select.args.get("where") is not None:
            filter_sql = scope.compile(select.args["where"].this, where).sql
        is_star = (len(select.expressions) == 1 and isinstance(select.expressions[0], exp.Star))
        if wanted == Kind.TABLE and is_star and filter_sql is None and inp.windowed is None:
            return self._materialize(inp, step_id, output, select)
        result = ProjectionBuilder(scope, where).build(list(select.expressions))
        relation = Relation(
            kind=Kind.STREAM,
            key_type=result.key.type if result.key else inp.relation.key_type,
            columns=tuple(result.specs),
            key_columns=inp.relation.key_columns if result.star_key and not result.key else (),
            time_column=_kept_time_column(result, inp),
            watermark_ms=inp.relation.watermark_ms,
        )
        project_id = step_id if wanted == Kind.STREAM else self._fresh_id(f"{step_id}_stream")
        project = self._add(ProjectStep(
            id=project_id, inputs=(inp.step_id,), relation=relation,
            output=output if wanted == Kind.STREAM else None, where=self.stmt.where,
            sql=self.stmt.parsed.text, filter=filter_sql, select=tuple(result.columns),
            key=result.key.sql if result.key else None,
        ))
        if wanted == Kind.STREAM:
            return project
        inner = Input(side="t", step_id=project.id, relation=relation,
                      views=[plain_view(step_id, relation)], position=where)
        return self._materialize(inner, step_id, output, select)

    def _aggregate(self, select: exp.Select, inp: Input, step_id: str, output: str | None,
                   forced: Kind | None, filtered: bool = False) -> Step:
        """GROUP BY over one input (a source, a step, or the join step of the
        same statement): a table keyed by the grouping expressions."""
        where = self.stmt.pos(select)
        if forced == Kind.STREAM:
            raise SqlError(where, "GROUP BY gives a table (one row per group), not a stream",
                           "write CREATE TABLE ... AS SELECT")
        if inp.relation.kind == Kind.TABLE:
            raise SqlError(where, f"aggregating the table '{inp.alias}' is not supported yet",
                           "aggregate the stream it is read from")
        scope = Scope([inp], self.stmt.file, self.stmt.text)
        agg = AggregateBuilder(scope, where, filtered).build(select)
        relation = Relation(kind=Kind.TABLE, key_type=agg.key_type,
                            columns=tuple(agg.result.specs), key_columns=agg.key_columns,
                            watermark_ms=inp.relation.watermark_ms)
        return self._add(AggregateStep(
            id=step_id, inputs=(inp.step_id,), relation=relation, output=output,
            where=self.stmt.where, sql=self.stmt.parsed.text, filter=agg.filter,
            group_by=tuple(g.sql for g in agg.group_by), key=agg.key_sql,
            select=tuple(agg.result.columns), having=agg.having,
        ))

    def _materialize(self, inp: Input, step_id: str, output: str | None,
                     node: exp.Expression) -> Step:
        if inp.relation.kind == Kind.TABLE:
            raise SqlError(self.stmt.pos(node), f"'{inp.alias}' is already a table",
                           "read it directly")
        upstream = next(s for s in self.steps if s.id == inp.step_id)
        skip = set(inp.relation.key_columns)
        if inp.relation.time_column:
            skip.add(inp.relation.time_column)
        tombstone = tuple(c.name for c in inp.relation.columns if c.name not in skip)
        return self._add(MaterializeStep(
            id=step_id, inputs=(upstream.id,), output=output, where=self.stmt.where,
            sql=self.stmt.parsed.text,
            relation=inp.relation.model_copy(update={"kind": Kind.TABLE}),
            tombstone_columns=tombstone,
        ))

    def _no_stream_window(self, inp: Input) -> None:
        window = inp.node.args.get("stream_window") if inp.node is not None else None
        if window is not None:
            raise SqlError(self.stmt.pos(window), "an OVER window only means something in a "
                           "stream-stream join", "drop the OVER (...) clause")

    # -- joins --------------------------------------------------------------
    def _joins(self, select: exp.Select, joins: list[exp.Join], step_id: str,
               output: str | None, forced: Kind | None, grouped: bool) -> Step:
        """A chain joins left to right, one step per stage. With GROUP BY the
        last stage keeps every column (``*``) and an aggregation step follows."""
        left = self._input(select.args["from_"].this, "l")
        for index, join in enumerate(joins):
            last = index == len(joins) - 1
            right = self._input(join.this, "r")
            if last and not grouped:
                shape = _Shape(where=select.args.get("where"), items=list(select.expressions),
                               declared=_declared_kind(select))
                return self._join_stage(shape, join, left, right, step_id, output, forced)
            if last:
                stage_id = self._fresh_id(f"{step_id}_join")
                shape = _Shape(where=select.args.get("where"))
            else:
                stage_id = self._fresh_id(f"{step_id}_stage{index + 1}")
                shape = _Shape()
            stage = self._join_stage(shape, join, left, right, stage_id, None, None)
            left = self._chained_input(stage, left, right, "t" if last else "l")
            if last:
                return self._aggregate(select, left, step_id, output, forced, filtered=True)
        raise AssertionError("unreachable")

    def _chained_input(self, stage: Step, left: Input, right: Input, side: str) -> Input:
        """The result of a join step, seen as the input of the next step
        (the next stage of a chain, or an aggregation), under every alias of
        the inputs it joined."""
        assert isinstance(stage, JoinStep)
        views: list[AliasView] = []
        for inp in (left, right):
            scope = Scope([left, right], self.stmt.file, self.stmt.text)
            builder = ProjectionBuilder(scope, inp.position)
            mapping = {
                c.physical.lower(): c.name
                for c in builder.star_columns(None, inp.position) if c.input is inp
            }
            for view in inp.views:
                cols = {lower: mapping[physical.lower()] for lower, physical in
                        view.columns.items() if physical.lower() in mapping}
                views.append(AliasView(name=view.name, columns=cols, has_key=False))
        return Input(side=side, step_id=stage.id, relation=stage.relation, views=views,
                     position=left.position, node=None)

    def _join_stage(self, shape: _Shape, join: exp.Join, left: Input, right: Input,
                    step_id: str, output: str | None, forced: Kind | None) -> Step:
        pos = self.stmt.pos(join)
        join_type = _join_type(join)
        lk, rk = left.relation.kind, right.relation.kind
        scope = Scope([left, right], self.stmt.file, self.stmt.text)
        asof = str(join.args.get("method") or "").upper() == "ASOF"
        if asof:  # any two inputs; the result is a table (sql/asof.py)
            check_asof_join(join, join_type, left, right, scope, pos)
        elif join_type not in COMPATIBLE[(lk, rk)]:
            raise SqlError(pos, _incompatible(join_type, lk, rk),
                           _incompatible_fix(join_type, lk, rk))
        using = self._using_columns(join, left, right, pos)
        reject_aggregate(join.args.get("on"), "ON", scope, pos,
                         "aggregate in the projection, with GROUP BY")
        condition = self._condition(join, scope, left, right, using, join_type, pos)
        window, hint, inequality = None, None, None
        if asof:
            inequality, condition = asof_inequality(condition, scope, pos)
        elif lk == rk == Kind.STREAM:
            found = stream_stream_window(join, left, right, condition, scope, pos,
                                         self._setting_ms("join.grace.period"))
            window, condition, hint = found.window, found.condition, found.hint
        else:
            reject_window_clauses(join, left, right, scope, pos)
        self._check_equalities(condition, lk, rk, join_type, pos)
        if lk == rk == Kind.STREAM and not asof:
            self._check_stream_stream(window, condition, join_type, left, right, pos, hint)
        if not asof:  # an ASOF result keeps the left row's key
            left, right = self._repartitioned(left, right, condition)
        left = replace(left, optional=join_type in (JoinType.RIGHT, JoinType.FULL))
        right = replace(right, optional=join_type in (JoinType.LEFT, JoinType.FULL))
        scope = Scope([left, right], self.stmt.file, self.stmt.text)
        # An ASOF join's WHERE over the right input runs after it, as on an
        # outer join's optional side: before, it would change the nearest row.
        pre_l, pre_r, post = self._place_where(shape.where, scope,
                                               JoinType.LEFT if asof else join_type, pos)
        l_filters = [*pre_l, *(condition.left_only if join_type in
                               (JoinType.INNER, JoinType.RIGHT) else [])]
        r_filters = [*pre_r, *(condition.right_only if join_type in
                               (JoinType.INNER, JoinType.LEFT) else [])]
        residual = [*condition.constant, *(c for _, c in condition.cross)]
        if join_type in (JoinType.LEFT, JoinType.FULL):
            residual += condition.left_only
        if join_type in (JoinType.RIGHT, JoinType.FULL):
            residual += condition.right_only
        result = ProjectionBuilder(scope, pos, using=using).build(shape.items or [exp.Star()])
        key_sql, key_type = self._join_key(condition)
        key_mode = None
        if asof:
            key_sql, key_type = f"l.{KEY}", left.relation.key_type
            if result.key is not None:
                raise SqlError(pos, "an ASOF join's result is keyed by its left row's key; "
                               "a projection AS _key cannot change it",
                               "project the value under another name")
        elif lk == rk == Kind.TABLE:
            key_mode, key_sql, key_type = table_join_key(condition, left, right, join_type)
        if result.key is not None:
            key_sql, key_type = result.key.sql, result.key.type
        kind = Kind.TABLE if asof else result_kind(lk, rk)
        wanted = shape.declared or forced or kind
        if wanted != kind:
            raise SqlError(pos, f"this join of a {lk} and a {rk} gives a {kind}, not a {wanted}",
                           f"write SELECT {kind.upper()} (or CREATE {kind.upper()} ... AS)")
        marks = [m for m in (left.relation.watermark_ms, right.relation.watermark_ms)
                 if m is not None]
        relation = Relation(kind=kind, key_type=key_type, columns=tuple(result.specs),
                            key_columns=tuple(p.name for p in result.columns
                                              if p.expr == key_sql)[:1],
                            watermark_ms=max(marks) if marks else None)
        return self._add(JoinStep(
            id=step_id, inputs=(left.step_id, right.step_id), relation=relation, output=output,
            where=self.stmt.where, sql=self.stmt.parsed.text, join_type=join_type,
            left_kind=lk, right_kind=rk,
            equalities=tuple(Equality(left=e.left.sql, right=e.right.sql, text=e.text)
                             for e in condition.equalities),
            left_filter=and_all(l_filters), right_filter=and_all(r_filters),
            residual=and_all(residual), post_filter=and_all(post), window=window,
            select=tuple(result.columns), key=key_sql,
            rowtime="l.ROWTIME" if asof else _result_rowtime(lk, rk), key_mode=key_mode,
            proctime=bool(right.node is not None and right.node.args.get("proctime")),
            late_match_retention_ms=self._setting_ms("join.late.match.retention"),
            asof=inequality,
        ))

    def _check_stream_stream(self, window: Window | None, condition: SplitCondition,
                             join_type: JoinType, left: Input, right: Input,
                             pos: Position, hint: str | None = None) -> None:
        """A join of two streams needs a window, and an equality unless it
        is a CROSS join (LANGUAGE.md, "Stream-stream windows")."""
        if window is None:
            raise SqlError(pos, "a stream-stream join needs a window: without one every record "
                           "would wait forever for a match" + (f" ({hint})" if hint else ""),
                           "add WITHIN, for example '... JOIN b WITHIN 5 MINUTES ON ...', an "
                           "OVER (RANGE INTERVAL '1' MINUTE PRECEDING) on each input, or a "
                           "time bound in ON such as l.ts BETWEEN r.ts - INTERVAL '1' MINUTE "
                           "AND r.ts + INTERVAL '1' MINUTE")
        if join_type != JoinType.CROSS and not condition.equalities:
            raise SqlError(pos, "a stream-stream join needs at least one equality between the "
                           "inputs besides its window, or must be a CROSS JOIN",
                           f"add an equality to ON, for example {left.alias}.id = "
                           f"{right.alias}.id, or write CROSS JOIN to pair every two records "
                           "of the window")

    def _using_columns(self, join: exp.Join, left: Input, right: Input,
                       pos: Position) -> set[str]:
        if join.args.get("using"):
            return {u.name.lower() for u in join.args["using"]}
        if join.args.get("method", "").upper() == "NATURAL":
            common = set(left.views[0].columns) & set(right.views[0].columns)
            if not common:
                raise SqlError(pos, f"NATURAL JOIN of '{left.alias}' and '{right.alias}': they "
                               "have no column name in common", "write the condition with ON")
            return common
        return set()

    def _condition(self, join: exp.Join, scope: Scope, left: Input, right: Input,
                   using: set[str], join_type: JoinType, pos: Position) -> SplitCondition:
        on = join.args.get("on")
        if using:
            parts = []
            for name in sorted(using):
                for inp in (left, right):
                    if name not in inp.views[0].columns:
                        raise SqlError(pos, f"USING column '{name}' is not a column of "
                                       f"'{inp.alias}'", "name a column both inputs have")
                parts.append(exp.EQ(this=exp.column(name, table=left.alias),
                                    expression=exp.column(name, table=right.alias)))
            on = exp.and_(*parts) if len(parts) > 1 else parts[0]
        elif on is None and join_type != JoinType.CROSS:
            on = exp.EQ(this=exp.column(KEY, table=left.alias),
                        expression=exp.column(KEY, table=right.alias))
        return split_on(on, scope, pos, self.stmt.parsed.text)

    def _check_equalities(self, condition: SplitCondition, lk: Kind, rk: Kind,
                          join_type: JoinType, pos: Position) -> None:
        for eq in condition.equalities:
            if not same_type_family(eq.left.type, eq.right.type):
                lhs, rhs = eq.left_node.sql(), eq.right_node.sql()
                raise SqlError(
                    self.stmt.pos(eq.node),
                    f"the join compares {lhs} ({eq.left.type.upper()}) with {rhs} "
                    f"({eq.right.type.upper()}): the two sides' key types must agree",
                    f"CAST one side to the other's type, for example "
                    f"{lhs} = CAST({rhs} AS {eq.left.type.upper()})",
                )
        if lk != rk and condition.cross:
            part, _ = condition.cross[0]
            raise SqlError(self.stmt.pos(part),
                           f"a stream-table join matches by equality only, but '{part.sql()}' "
                           "compares the two inputs another way",
                           "join on equalities (stream.col = table.col); filter the joined "
                           "rows with WHERE")
        if lk != rk and not condition.equalities:
            raise SqlError(pos, "a stream-table join needs at least one equality between the "
                           "inputs", "add ON stream.col = table.col")

    def _repartitioned(self, left: Input, right: Input, condition: SplitCondition
                       ) -> tuple[Input, Input]:
        """Re-key each stream input whose key is not the join expression."""
        out = []
        for inp in (left, right):
            if inp.relation.kind != Kind.STREAM or not condition.equalities:
                out.append(inp)
                continue
            exprs = [e.left if inp.side == "l" else e.right for e in condition.equalities]
            if _is_key(exprs, inp):
                out.append(inp)
                continue
            out.append(self._repartition(inp, exprs))
        return out[0], out[1]

    def _repartition(self, inp: Input, exprs: list[Compiled]) -> Input:
        """A step re-keying ``inp`` by the join expressions; one already made
        for the same input and key by an earlier statement is reused."""
        unqualified = [e.node.transform(_strip_side) for e in exprs if e.node is not None]
        if len(unqualified) == 1:
            key_sql, key_type = unqualified[0].sql(dialect="spark"), exprs[0].type
        else:
            key_sql = "named_struct(" + ", ".join(
                f"'k{i}', {n.sql(dialect='spark')}" for i, n in enumerate(unqualified)) + ")"
            key_type = struct_type([(f"k{i}", e.type) for i, e in enumerate(exprs)])
        existing = next((s for s in self.steps if isinstance(s, RepartitionStep)
                         and s.inputs == (inp.step_id,) and s.key == key_sql), None)
        if existing is not None:
            step: Step = existing
        else:
            label = "_".join(n.name if isinstance(n, exp.Column) else "expr"
                             for n in unqualified)
            relation = inp.relation.model_copy(update={
                "key_type": key_type, "key_columns": _key_columns(exprs, inp)})
            step = self._add(RepartitionStep(
                id=self._fresh_id(f"{inp.step_id}_by_{label}"), inputs=(inp.step_id,),
                relation=relation, where=self.stmt.where, sql=self.stmt.parsed.text,
                key=key_sql,
            ))
        return Input(side=inp.side, step_id=step.id, relation=step.relation, views=inp.views,
                     position=inp.position, node=inp.node)

    def _place_where(self, where: exp.Where | None, scope: Scope, join_type: JoinType,
                     pos: Position) -> tuple[list[Compiled], list[Compiled], list[Compiled]]:
        """Push each WHERE conjunct over one input before the join where that
        cannot change the result; the rest filters the joined rows."""
        pre_l: list[Compiled] = []
        pre_r: list[Compiled] = []
        post: list[Compiled] = []
        if where is None:
            return pre_l, pre_r, post
        left_ok = join_type in (JoinType.INNER, JoinType.LEFT, JoinType.CROSS)
        right_ok = join_type in (JoinType.INNER, JoinType.RIGHT, JoinType.CROSS)
        for part in conjuncts(where.this):
            compiled = scope.compile(part, pos)
            if compiled.inputs == {"l"} and left_ok:
                pre_l.append(compiled)
            elif compiled.inputs == {"r"} and right_ok:
                pre_r.append(compiled)
            else:
                post.append(compiled)
        return pre_l, pre_r, post

    @staticmethod
    def _join_key(condition: SplitCondition) -> tuple[str, str]:
        """A join result is keyed by its equality expressions: the present
        side's value when one side is missing, a struct when there are several."""
        eqs = condition.equalities
        if not eqs:
            return "CAST(NULL AS STRING)", "string"
        parts = [(f"coalesce({e.left.sql}, {e.right.sql})", e.left.type) for e in eqs]
        if len(parts) == 1:
            return parts[0]
        sql = "named_struct(" + ", ".join(f"'k{i}', {p}" for i, (p, _) in
                                           enumerate(parts)) + ")"
        return sql, struct_type([(f"k{i}", t) for i, (_, t) in enumerate(parts)])


class _Skip(Exception):
    """A statement reads a name whose own statement was rejected: its error
    has been reported already, so this one is skipped silently."""


def quote(name: str) -> str:
    """A column name as a Spark SQL identifier."""
    return "`" + name.replace("`", "``") + "`"


def _is_grouped(select: exp.Select) -> bool:
    """Whether a query aggregates: GROUP BY, HAVING, or an aggregate call
    among its projections (which then needs GROUP BY)."""
    if select.args.get("group") or select.args.get("having"):
        return True
    return any(find_aggregate(item) is not None for item in select.expressions)


def _kept_time_column(result: ProjectionResult, inp: Input) -> str | None:
    """The output column that still is the input's event time column."""
    time_column = inp.relation.time_column
    if time_column is None:
        return None
    if result.star_key:
        return time_column
    for name, leaf in result.value_leaves.items():
        node = leaf.node
        if isinstance(node, exp.Column) and node.name.lower() == time_column.lower():
            return name
    return None


def _declared_not_null(column: exp.Expression) -> bool:
    return any(isinstance(c, exp.ColumnConstraint)
               and isinstance(c.args.get("kind"), exp.NotNullColumnConstraint)
               and not c.args["kind"].args.get("allow_null")
               for c in column.args.get("constraints") or [])


def _name(node: exp.Expression) -> str:
    if isinstance(node, exp.Table):
        return nodes.table_name(node)
    return node.name


def _declared_name(node: exp.Expression) -> str | None:
    if isinstance(node, nodes.Explain):
        return _declared_name(node.this)
    if isinstance(node, nodes.STATEMENT_TYPES) and not isinstance(node, nodes.SetOption):
        target = node.this
        return _name(target) if isinstance(target, exp.Expression) else None
    return None


def _declared_kind(select: exp.Select) -> Kind | None:
    word = (select.args.get("result_kind") or "").upper()
    return {"STREAM": Kind.STREAM, "TABLE": Kind.TABLE}.get(word)


def _join_type(join: exp.Join) -> JoinType:
    side = (join.args.get("side") or "").upper()
    kind = (join.args.get("kind") or "").upper()
    if kind == "CROSS":
        return JoinType.CROSS
    return {"LEFT": JoinType.LEFT, "RIGHT": JoinType.RIGHT,
            "FULL": JoinType.FULL}.get(side, JoinType.INNER)


def _result_rowtime(lk: Kind, rk: Kind) -> str:
    """A stream-table result has the stream record's time; two streams' result
    the later of the two (greatest() skips the missing side of a one-sided row)."""
    if lk == rk:
        return "greatest(l.ROWTIME, r.ROWTIME)"
    return "l.ROWTIME" if lk == Kind.STREAM else "r.ROWTIME"


def _incompatible(join_type: JoinType, lk: Kind, rk: Kind) -> str:
    if join_type == JoinType.FULL:
        return (f"FULL JOIN of a {lk} and a {rk} has no sound meaning: a table row that never "
                "matched has no moment at which to be emitted")
    return f"{join_type.value} JOIN of a {lk} (left) and a {rk} (right) is not allowed"


def _incompatible_fix(join_type: JoinType, lk: Kind, rk: Kind) -> str:
    if lk == Kind.STREAM:
        return ("use LEFT JOIN or INNER JOIN (the stream on the left), or read both sides as "
                "streams and join them WITHIN a window")
    return ("use RIGHT JOIN or INNER JOIN (the stream on the right), or swap the inputs and "
            "use LEFT JOIN")


def _is_key(exprs: list[Compiled], inp: Input) -> bool:
    """Whether the join expressions are exactly the input's key."""
    if len(exprs) == 1 and exprs[0].node is not None:
        node = exprs[0].node
        if isinstance(node, exp.Column) and node.name == KEY:
            return True
    names = []
    for e in exprs:
        node = e.node
        if not isinstance(node, exp.Column):
            return False
        names.append(node.name)
    return bool(names) and tuple(names) == inp.relation.key_columns


def _key_columns(exprs: list[Compiled], inp: Input) -> tuple[str, ...]:
    names = [e.node.name for e in exprs if isinstance(e.node, exp.Column)]
    return tuple(names) if len(names) == len(exprs) == 1 else ()


def _strip_side(n: exp.Expression) -> exp.Expression:
    if isinstance(n, exp.Column) and n.table in ("l", "r"):
        return exp.column(n.this.copy())
    return n


__all__ = ["UNKNOWN", "Analyzer", "interval_ms", "parse_duration_ms"]

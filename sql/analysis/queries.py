"""Query statements: a query's inputs, single-input queries (a projection,
with a table materialized from it when asked), GROUP BY, and the hand-off of
queries with joins to :mod:`splice.sql.analysis.joins`."""

from __future__ import annotations

from splice.sql import expressions
from splice.sql.aggregate import AggregateBuilder, find_aggregate
from splice.sql.analysis.base import Skip, declared_kind
from splice.sql.analysis.windows import WindowTableAnalyzer
from splice.sql.errors import SqlError
from splice.sql.plan import AggregateStep, Kind, MaterializeStep, ProjectStep, Relation, Step
from splice.sql.projection import ProjectionBuilder, ProjectionResult
from splice.sql.scope import Input, Scope, plain_view
from splice.sql.select_rules import check_select
from sqlglot import exp


class QueryAnalyzer(WindowTableAnalyzer):
    """A query's steps, except its joins."""

    def _query(self, name: str, select: exp.Expression, output: str | None,
               forced: Kind | None) -> Step | None:
        """The query's steps; its last one, or ``None`` when it reads a name
        whose statement was rejected (that statement's error is reported)."""
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
            return final
        except Skip:
            self.broken.add(name.lower())
            return None

    def _input(self, node: exp.Expression, side: str) -> Input:
        if isinstance(node, expressions.WindowTable):
            return self._windowed_input(node, side)
        if not isinstance(node, exp.Table):
            raise SqlError(self.stmt.pos(node), "only sources and named steps may be read here",
                           "name the subquery with WITH name AS (SELECT ...); and read it")
        step = self._lookup(node)
        alias = node.alias or expressions.table_name(node).split(".")[-1]
        return Input(side=side, step_id=step.id, relation=step.relation,
                     views=[plain_view(alias, step.relation)], position=self.stmt.pos(node),
                     node=node)

    def _single(self, select: exp.Select, step_id: str, output: str | None,
                forced: Kind | None, grouped: bool) -> Step:
        source = select.args["from_"].this
        inp = self._input(source, "t")
        self._no_stream_window(inp)
        where = self.stmt.pos(select)
        if grouped:
            return self._aggregate(select, inp, step_id, output, forced)
        scope = Scope([inp], self.stmt.file, self.stmt.text)
        wanted = declared_kind(select) or forced or inp.relation.kind
        filter_sql = None
        if select.args.get("where") is not None:
            filter_sql = scope.compile(select.args["where"].this, where).sql
        if inp.relation.kind == Kind.TABLE:
            return self._table_query(select, inp, scope, filter_sql, step_id, output, wanted)
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

    def _table_query(self, select: exp.Select, inp: Input, scope: Scope,
                     filter_sql: str | None, step_id: str, output: str | None,
                     wanted: Kind) -> Step:
        """A projection or filter of one table: a table with the same key,
        maintained from the input's changes (a row that stops passing the
        filter, or is deleted, is deleted from the result), as ksqlDB and
        RisingWave maintain ``CREATE TABLE t2 AS SELECT ... FROM t1 WHERE``."""
        where = self.stmt.pos(select)
        if wanted == Kind.STREAM:
            raise SqlError(where, f"a query over the table '{inp.alias}' gives a table, not a "
                           "stream", "write CREATE TABLE ... AS SELECT, or read the stream "
                           "the table is built from")
        result = ProjectionBuilder(scope, where).build(list(select.expressions))
        if result.key is not None:
            raise SqlError(where, f"a query over the table '{inp.alias}' keeps the table's key",
                           "drop the projection into _key; re-key the stream the table "
                           "is built from instead")
        key_columns = {c.lower() for c in inp.relation.key_columns}
        kept = tuple(name for name, leaf in result.value_leaves.items()
                     if isinstance(leaf.node, exp.Column) and leaf.node.name.lower() in key_columns)
        relation = Relation(kind=Kind.TABLE, key_type=inp.relation.key_type,
                            columns=tuple(result.specs),
                            key_columns=inp.relation.key_columns if result.star_key else kept,
                            time_column=_kept_time_column(result, inp),
                            watermark_ms=inp.relation.watermark_ms)
        return self._add(ProjectStep(
            id=step_id, inputs=(inp.step_id,), relation=relation, output=output,
            where=self.stmt.where, sql=self.stmt.parsed.text, filter=filter_sql,
            select=tuple(result.columns)))

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

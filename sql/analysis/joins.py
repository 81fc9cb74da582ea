"""Queries with joins: a chain joins left to right, one join step per stage;
each stage is checked (which inputs may join, how, with which window) and
planned (filters placed, inputs re-keyed, the result keyed and timed)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from splice.sql.aggregate import reject_aggregate
from splice.sql.analysis.base import declared_kind
from splice.sql.analysis.join_rules import JoinRules
from splice.sql.analysis.repartition import Repartitioner
from splice.sql.asof import asof_inequality, check_asof_join
from splice.sql.columns import KEY, ROWTIME
from splice.sql.conditions import and_all, conjuncts
from splice.sql.errors import SqlError
from splice.sql.plan import Equality, JoinStep, JoinType, Kind, Relation, Step
from splice.sql.projection import ProjectionBuilder
from splice.sql.scope import AliasView, Input, Scope
from splice.sql.table_keys import mirrored_key_columns, table_join_key
from splice.sql.where_parts import (
    is_comma,
    stage_candidates,
    where_join_parts,
    where_window_hint,
)
from splice.sql.windows import reject_window_clauses, stream_stream_window
from sqlglot import exp

# Which inputs may join, and with which join types (LANGUAGE.md, section 2).
COMPATIBLE: dict[tuple[Kind, Kind], set[JoinType]] = {
    (Kind.STREAM, Kind.STREAM): set(JoinType),
    (Kind.TABLE, Kind.TABLE): set(JoinType),
    (Kind.STREAM, Kind.TABLE): {JoinType.INNER, JoinType.LEFT},
    (Kind.TABLE, Kind.STREAM): {JoinType.INNER, JoinType.RIGHT},
}


def result_kind(left: Kind, right: Kind) -> Kind:
    return Kind.TABLE if left == right == Kind.TABLE else Kind.STREAM


@dataclass
class _Shape:
    """What a join step projects and filters: the statement's own WHERE and
    projections for its last stage, ``*`` for a stage whose result a later
    step reads.

    ``pending`` holds the conjuncts of the statement's WHERE not taken yet,
    one list shared by the stages of a chain: a stage takes those that are
    part of its condition (sql/where_parts.py), and the last stage places
    the rest (``last``)."""

    pending: list[exp.Expression]
    last: bool = False
    items: list[exp.Expression] | None = None
    declared: Kind | None = None


class JoinAnalyzer(JoinRules, Repartitioner):
    """Join chains and their stages."""

    def _joins(self, select: exp.Select, joins: list[exp.Join], step_id: str,
               output: str | None, forced: Kind | None, grouped: bool) -> Step:
        """A chain joins left to right, one step per stage. With GROUP BY the
        last stage keeps every column (``*``) and an aggregation step follows."""
        left = self._input(select.args["from_"].this, "l")
        where = select.args.get("where")
        pending = conjuncts(where.this) if where is not None else []
        for index, join in enumerate(joins):
            last = index == len(joins) - 1
            right = self._input(join.this, "r")
            if last and not grouped:
                shape = _Shape(pending, last=True, items=list(select.expressions),
                               declared=declared_kind(select))
                return self._join_stage(shape, join, left, right, step_id, output, forced)
            if last:
                stage_id = self._fresh_id(f"{step_id}_join")
                shape = _Shape(pending, last=True)
            else:
                stage_id = self._fresh_id(f"{step_id}_stage{index + 1}")
                shape = _Shape(pending)
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
        candidates = stage_candidates(shape.pending, scope, shape.last)
        taken = where_join_parts(candidates, join, join_type, scope, left, right, pos)
        shape.pending[:] = [p for p in shape.pending if all(p is not t for t in taken)]
        if is_comma(join) and any(isinstance(p, exp.EQ) for p in taken):
            join_type = JoinType.INNER  # FROM l, r WHERE l.a = r.b: l JOIN r ON l.a = r.b
        asof = str(join.args.get("method") or "").upper() == "ASOF"
        if asof:  # any two inputs; the result is a table (sql/asof.py)
            check_asof_join(join, join_type, left, right, scope, pos)
        elif join_type not in COMPATIBLE[(lk, rk)]:
            rule, fix = _incompatible(join_type, lk, rk), _incompatible_fix(join_type, lk, rk)
            if is_comma(join):  # CROSS: WHERE has no equality of the inputs
                rule = ("this comma join is a CROSS JOIN, as its WHERE has no equality between "
                        f"the inputs, and a {rule}")
                fix = f"add one to WHERE (it makes the join an INNER JOIN), or {fix}"
            raise SqlError(pos, rule, fix)
        using = self._using_columns(join, left, right, pos)
        reject_aggregate(join.args.get("on"), "ON", scope, pos,
                         "aggregate in the projection, with GROUP BY")
        condition = self._condition(join, scope, left, right, using, join_type, pos, taken)
        window, hint, inequality = None, None, None
        if asof:
            inequality, condition = asof_inequality(condition, scope, pos)
        elif lk == rk == Kind.STREAM:
            found = stream_stream_window(join, left, right, condition, scope, pos,
                                         self._setting_ms("join.grace.period"))
            window, condition, hint = found.window, found.condition, found.hint
            if window is None and hint is None:
                rest = [p for p in candidates if all(p is not t for t in taken)]
                hint = where_window_hint(rest, join, join_type, scope, left, right, pos)
            if is_comma(join) and not condition.equalities:
                join_type = JoinType.CROSS  # its only equality was of the times: a window
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
        pre_l, pre_r, post = self._place_where(shape.pending if shape.last else [], scope,
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
        mirrored = mirrored_key_columns(result.columns, key_mode, join_type, left, right) \
            if key_mode and result.key is None else ()
        relation = Relation(kind=kind, key_type=key_type, columns=tuple(result.specs),
                            key_columns=mirrored or tuple(p.name for p in result.columns
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
            rowtime=f"l.{ROWTIME}" if asof else _result_rowtime(lk, rk), key_mode=key_mode,
            proctime=bool(right.node is not None and right.node.args.get("proctime")),
            late_match_retention_ms=self._setting_ms("join.late.match.retention"),
            asof=inequality,
        ))


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
        return f"greatest(l.{ROWTIME}, r.{ROWTIME})"
    return f"l.{ROWTIME}" if lk == Kind.STREAM else f"r.{ROWTIME}"


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

"""The rules of one join stage: its condition (ON, USING, NATURAL, or the
inputs' keys), the checks of its equalities and of stream-stream joins,
where each WHERE conjunct runs, and the key of its result."""

from __future__ import annotations

from splice.sql.analysis.base import AnalyzerBase
from splice.sql.columns import KEY
from splice.sql.conditions import SplitCondition, conjuncts, split_parts
from splice.sql.errors import Position, SqlError
from splice.sql.plan import JoinType, Kind, Window
from splice.sql.scope import Compiled, Input, Scope
from splice.sql.types import same_type_family, struct_type
from splice.sql.where_parts import is_comma
from sqlglot import exp


class JoinRules(AnalyzerBase):
    """Checks and placements of a join stage."""

    def _check_stream_stream(self, window: Window | None, condition: SplitCondition,
                             join_type: JoinType, left: Input, right: Input,
                             pos: Position, hint: str | None = None) -> None:
        """A join of two streams needs a window, and an equality unless it
        is a CROSS join (LANGUAGE.md, "Stream-stream windows")."""
        if window is None:
            # An outer join's WHERE filters its null-padded rows: no window there.
            where = "ON or WHERE" if join_type in (JoinType.INNER, JoinType.CROSS) else "ON"
            raise SqlError(pos, "a stream-stream join needs a window: without one every record "
                           "would wait forever for a match" + (f" ({hint})" if hint else ""),
                           "add WITHIN, for example '... JOIN b WITHIN 5 MINUTES ON ...', an "
                           "OVER (RANGE INTERVAL '1' MINUTE PRECEDING) on each input, or a "
                           f"time bound in {where} such as l.ts BETWEEN r.ts - INTERVAL '1' "
                           "MINUTE AND r.ts + INTERVAL '1' MINUTE")
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
                   using: set[str], join_type: JoinType, pos: Position,
                   from_where: list[exp.Expression]) -> SplitCondition:
        """The join's condition: ON (or USING, NATURAL, or the inputs' keys
        when nothing is written) and the conjuncts of WHERE that are part of
        it (``from_where``, sql/where_parts.py)."""
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
        elif on is None and join_type != JoinType.CROSS and not is_comma(join):
            on = exp.EQ(this=exp.column(KEY, table=left.alias),
                        expression=exp.column(KEY, table=right.alias))
        return split_parts([*conjuncts(on), *from_where], scope, pos)

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

    def _place_where(self, parts: list[exp.Expression], scope: Scope, join_type: JoinType,
                     pos: Position) -> tuple[list[Compiled], list[Compiled], list[Compiled]]:
        """Push each WHERE conjunct (of those not part of the join's
        condition) over one input before the join where that cannot change
        the result; the rest filters the joined rows."""
        pre_l: list[Compiled] = []
        pre_r: list[Compiled] = []
        post: list[Compiled] = []
        left_ok = join_type in (JoinType.INNER, JoinType.LEFT, JoinType.CROSS)
        right_ok = join_type in (JoinType.INNER, JoinType.RIGHT, JoinType.CROSS)
        for part in parts:
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

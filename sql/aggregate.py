"""GROUP BY: the rules of an aggregation and what it computes.

An aggregation is a table keyed by its grouping expressions, whether written
``SELECT STREAM`` (Lenses) or ``SELECT TABLE`` (LANGUAGE.md, "Filters and
grouping"). Its projections are aggregate calls (COUNT, SUM, MIN, MAX, AVG)
and expressions of the grouping expressions; a column that is neither
grouped nor aggregated is rejected, naming it. The result's key is the one
grouping expression, or a struct of several named after their columns.
"""

from __future__ import annotations

from dataclasses import dataclass

from splice.sql.columns import ROWTIME
from splice.sql.errors import Position, SqlError
from splice.sql.expressions import PathAlias
from splice.sql.projection import ProjectionBuilder, ProjectionResult
from splice.sql.scope import Compiled, Scope
from splice.sql.types import UNKNOWN, struct_type
from sqlglot import exp

AGGREGATES: dict[type[exp.Expression], str] = {
    exp.Count: "COUNT", exp.Sum: "SUM", exp.Min: "MIN", exp.Max: "MAX", exp.Avg: "AVG",
}
_NUMERIC = ("tinyint", "smallint", "int", "bigint", "float", "double", "decimal")


@dataclass
class Aggregation:
    """What one GROUP BY query computes, as Spark SQL over its input."""

    group_by: list[Compiled]
    key_sql: str
    key_type: str
    key_columns: tuple[str, ...]
    result: ProjectionResult
    filter: str | None
    having: str | None


def item_expression(item: exp.Expression) -> exp.Expression:
    """The expression of a projection item, without its alias."""
    if isinstance(item, (exp.Alias, PathAlias)):
        return item.this
    return item


def find_aggregate(node: exp.Expression | None) -> exp.AggFunc | None:
    """The first aggregate call in ``node`` (window functions excluded)."""
    if node is None:
        return None
    for found in node.find_all(exp.AggFunc):
        if found.find_ancestor(exp.Window) is None:
            return found
    return None


def reject_aggregate(node: exp.Expression | None, clause: str, scope: Scope,
                     where: Position, fix: str) -> None:
    """Aggregates may not stand in WHERE, ON or GROUP BY."""
    found = find_aggregate(node)
    if found is not None:
        raise SqlError(scope.position(found, where),
                       f"an aggregate ({found.sql(dialect='spark')}) cannot stand in {clause}: "
                       f"{clause} is evaluated on single records, before grouping", fix)


class AggregateBuilder:
    """Checks and compiles one GROUP BY query over one input."""

    def __init__(self, scope: Scope, where: Position, filtered: bool = False) -> None:
        """``filtered``: the statement's WHERE has already been applied
        upstream (by the join step of the same statement)."""
        self.scope = scope
        self.where = where
        self.filtered = filtered
        self._groups: list[exp.Expression] = []  # canonical grouping expressions

    def build(self, select: exp.Select) -> Aggregation:
        group = select.args.get("group")
        items = list(select.expressions)
        for item in items:
            if isinstance(item, exp.Star) or (isinstance(item, exp.Column)
                                              and isinstance(item.this, exp.Star)):
                raise SqlError(self.scope.position(item, self.where),
                               "'*' cannot be projected with GROUP BY: it would project "
                               "columns that are neither grouped nor aggregated",
                               "name the grouping columns and the aggregates, for example "
                               "SELECT name, COUNT(*) AS total")
        if not isinstance(group, exp.Group) or not group.expressions:
            raise SqlError(self.scope.position(select, self.where),
                           "an aggregate needs GROUP BY: a streaming aggregation is a table "
                           "keyed by its grouping expressions",
                           "add GROUP BY with the columns to group by")
        for clause in ("rollup", "cube", "grouping_sets"):
            if group.args.get(clause):
                raise SqlError(self.scope.position(group, self.where),
                               f"GROUP BY {clause.replace('_', ' ').upper()} is not supported",
                               "group by plain expressions")
        where = select.args.get("where")
        reject_aggregate(where, "WHERE", self.scope, self.where,
                         "filter groups with HAVING instead")
        sources = [self._grouping_source(g, items) for g in group.expressions]
        compiled = [self.scope.compile(s, self.where) for s in sources]
        self._groups = [self._canonical(s) for s in sources]
        for item in items:
            self._check(item_expression(item))
        having = select.args.get("having")
        having_sql = None
        if isinstance(having, exp.Having):
            condition = self._with_aliases(having.this, items)
            self._check(condition)
            having_sql = self.scope.compile(condition, self.where).sql
        result = ProjectionBuilder(self.scope, self.where).build(items)
        key_sql, key_type = self._key(sources, compiled)
        if result.key is not None:
            self._check_key_projection(result, compiled, select)
            key_sql, key_type = result.key.sql, result.key.type
        filter_sql = (self.scope.compile(where.this, self.where).sql
                      if isinstance(where, exp.Where) and not self.filtered else None)
        return Aggregation(group_by=compiled, key_sql=key_sql, key_type=key_type,
                           key_columns=self._key_columns(compiled, result),
                           result=result, filter=filter_sql, having=having_sql)

    # -- grouping -----------------------------------------------------------
    def _grouping_source(self, node: exp.Expression, items: list[exp.Expression]
                         ) -> exp.Expression:
        """The expression a GROUP BY item groups by: itself, the projection
        it names by position (``GROUP BY 1``) or by alias (Spark's rules)."""
        pos = self.scope.position(node, self.where)
        if isinstance(node, exp.Literal) and not node.is_string:
            if not node.name.isdecimal() or not 1 <= int(node.name) <= len(items):
                raise SqlError(pos, f"GROUP BY {node.name} names no projection: there are "
                               f"{len(items)}", "group by a column, or by the position of a "
                               "projection (1 for the first)")
            node = item_expression(items[int(node.name) - 1])
        elif isinstance(node, exp.Column) and len(node.parts) == 1:
            node = self._alias_target(node, items) or node
        reject_aggregate(node, "GROUP BY", self.scope, pos,
                         "group by columns; aggregate in the projection")
        if node.find(exp.Column) is None:
            raise SqlError(pos, f"GROUP BY {node.sql()} groups by a constant",
                           "group by one or more columns of the input")
        return node

    def _alias_target(self, column: exp.Column, items: list[exp.Expression]
                      ) -> exp.Expression | None:
        """The projection a one-part GROUP BY name aliases, when it is not a
        column of the input."""
        try:
            self.scope.resolve(column, self.where)
            return None
        except SqlError:
            pass
        for item in items:
            if isinstance(item, exp.Alias) and item.alias.lower() == column.name.lower():
                return item.this
            if isinstance(item, PathAlias) and item.parts[-1].lower() == column.name.lower():
                return item.this
        return None

    def _with_aliases(self, node: exp.Expression, items: list[exp.Expression]
                      ) -> exp.Expression:
        """HAVING may name a projection by its alias (``HAVING n > 1``), as
        in Spark; the alias stands for the projection's expression."""
        def swap(n: exp.Expression) -> exp.Expression:
            if isinstance(n, exp.Column) and len(n.parts) == 1:
                target = self._alias_target(n, items)
                if target is not None:
                    return target.copy()
            return n

        return node.copy().transform(swap)

    def _canonical(self, node: exp.Expression) -> exp.Expression:
        """``node`` with every column reference resolved, for comparing
        expressions written with different qualifiers (``name``,
        ``c.name``)."""
        def swap(n: exp.Expression) -> exp.Expression:
            if isinstance(n, exp.Column) and not isinstance(n.this, exp.Star):
                return self.scope.resolve(n, self.where).node.copy()
            return n

        return node.copy().transform(swap)

    def _check(self, node: exp.Expression) -> None:
        """Every column outside an aggregate must be part of a grouping
        expression. A loop over the tree, outermost first (a chain of a
        thousand ``+`` is a tree a thousand deep)."""
        stack = [node]
        while stack:
            current = stack.pop()
            if isinstance(current, exp.AggFunc):
                self._check_aggregate(current)
                continue
            if isinstance(current, exp.Column) and current.name.upper() == ROWTIME:
                continue  # every output carries ROWTIME (a group's latest)
            if isinstance(current, exp.Column) and isinstance(current.this, exp.Star):
                continue
            if any(self._canonical(current) == g for g in self._groups):
                continue
            if isinstance(current, exp.Column):
                text = current.sql()
                raise SqlError(self.scope.position(current, self.where),
                               f"'{text}' is neither grouped nor aggregated: a group has one "
                               "row, and this column may differ between its records",
                               f"add {text} to GROUP BY, or aggregate it, for example "
                               f"MAX({text})")
            stack.extend(reversed(list(current.iter_expressions())))

    def _check_aggregate(self, call: exp.AggFunc) -> None:
        pos = self.scope.position(call, self.where)
        name = AGGREGATES.get(type(call))
        if name is None:
            raise SqlError(pos, f"{call.sql(dialect='spark')} is not an aggregate Splice "
                           "computes", "use COUNT, SUM, MIN, MAX or AVG")
        inner = next((n for n in call.find_all(exp.AggFunc) if n is not call), None)
        if inner is not None:
            raise SqlError(self.scope.position(inner, pos), "aggregates cannot be nested",
                           "aggregate the column directly, or group in a WITH step first")
        if call.find(exp.Distinct) is not None:
            raise SqlError(pos, f"{name}(DISTINCT ...) is not supported in a streaming "
                           "aggregation", f"group by the column first in a WITH step, then "
                           f"{name} the groups")
        arg = call.this
        if name in ("SUM", "AVG") and isinstance(arg, exp.Expression) and not isinstance(
                arg, exp.Star):
            typ = self.scope.compile(arg, self.where).type
            if typ != UNKNOWN and not typ.startswith(_NUMERIC):
                raise SqlError(pos, f"{name} needs a number, but {arg.sql()} is "
                               f"{typ.upper()}", "CAST it to a number, or use COUNT, MIN "
                               "or MAX")
        elif name != "COUNT" and (arg is None or isinstance(arg, exp.Star)):
            raise SqlError(pos, f"{name} needs a column", f"write {name}(column)")

    # -- key ----------------------------------------------------------------
    def _key(self, sources: list[exp.Expression], compiled: list[Compiled]
             ) -> tuple[str, str]:
        if len(compiled) == 1:
            return compiled[0].sql, compiled[0].type
        names: list[str] = []
        for i, source in enumerate(sources):
            base = source.name if isinstance(source, exp.Column) else f"k{i}"
            name, n = base, 2
            while name.lower() in (x.lower() for x in names):
                name, n = f"{base}_{n}", n + 1
            names.append(name)
        parts = ", ".join("'{}', {}".format(name.replace("'", "''"), c.sql)
                          for name, c in zip(names, compiled, strict=True))
        return (f"named_struct({parts})",
                struct_type([(name, c.type) for name, c in zip(names, compiled, strict=True)]))

    def _check_key_projection(self, result: ProjectionResult, compiled: list[Compiled],
                              select: exp.Select) -> None:
        """A projection onto ``_key`` must keep every grouping expression, so
        that the table keeps one row per group."""
        leaves = [leaf.node for leaf in result.key_leaves]
        for group in compiled:
            if not any(group.node == leaf for leaf in leaves):
                raise SqlError(self.scope.position(select, self.where),
                               f"the key projected with AS _key leaves out the grouping "
                               f"expression {group.sql}: two groups would share one key",
                               "project every grouping expression into the key, or drop the "
                               "key projection (the key is then the grouping expressions)")

    @staticmethod
    def _key_columns(compiled: list[Compiled], result: ProjectionResult) -> tuple[str, ...]:
        if result.key is not None:
            return ()
        names: list[str] = []
        for group in compiled:
            name = next((n for n, leaf in result.value_leaves.items()
                         if leaf.node is not None and leaf.node == group.node), None)
            if name is None:
                return ()
            names.append(name)
        return tuple(names)

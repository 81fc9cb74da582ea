"""The parts of a SELECT that a streaming step cannot mean.

The dialect parses all of Spark's SELECT, so that a mistake is reported as a
rule rather than a syntax error; this module rejects, with a position and a
way forward, what has no meaning on an unbounded stream (ORDER BY, LIMIT ...)
or what Splice expresses differently (a subquery is a WITH step).
"""

from __future__ import annotations

from collections.abc import Callable

from splice.sql.errors import Position, SqlError
from sqlglot import exp

# Select arguments a step may have; any other clause is rejected below.
# (A query hint, /*+ ... */, is accepted and has no effect.)
_ALLOWED = {"expressions", "from_", "joins", "where", "group", "having", "result_kind", "hint"}

_CLAUSES: dict[str, tuple[str, str]] = {
    "with_": ("a WITH inside a statement is not supported",
              "write each named query as its own statement: WITH name AS (SELECT ...);"),
    "distinct": ("SELECT DISTINCT is not supported on a stream",
                 "group by the columns instead: GROUP BY ..."),
    "order": ("ORDER BY has no meaning on a stream, which never ends",
              "remove ORDER BY; order the output table when you read it"),
    "limit": ("LIMIT has no meaning on a stream, which never ends",
              "remove LIMIT; limit the output when you read it"),
    "offset": ("OFFSET has no meaning on a stream, which never ends", "remove OFFSET"),
    "qualify": ("QUALIFY is not supported", "filter with WHERE"),
    "windows": ("a WINDOW clause is not supported",
                "join streams WITHIN a window, or use TUMBLE/HOP in FROM"),
    "laterals": ("LATERAL VIEW is not supported", "remove it"),
}


def check_select(select: exp.Select, pos: Callable[[exp.Expression], Position]) -> None:
    """Reject what a step's SELECT cannot hold."""
    for name in select.arg_types:
        value = select.args.get(name)
        if name in _ALLOWED or value is None or value is False or value == []:
            continue
        rule, fix = _CLAUSES.get(name, (f"this {name.upper().rstrip('_')} clause is not "
                                        "supported in a pipeline step", "remove it"))
        node = value[0] if isinstance(value, list) else value
        raise SqlError(pos(node) if isinstance(node, exp.Expression) else pos(select), rule, fix)
    if select.args.get("from_") is None:
        raise SqlError(pos(select), "a step reads a source or another step, and this SELECT "
                       "has no FROM", "add FROM <source or step>")
    for node in select.walk():
        if node is select:
            continue
        if isinstance(node, (exp.Subquery, exp.Query)):
            raise SqlError(pos(node), "a subquery is not supported inside a statement",
                           "name it with its own statement, WITH name AS (SELECT ...);, and "
                           "read or join it by name")
        if isinstance(node, exp.Window):
            raise SqlError(pos(node), "window functions (... OVER (...)) are not supported "
                           "in a projection or a condition",
                           "aggregate with GROUP BY, or join streams WITHIN a window")
    where = select.args.get("where")
    found = where.find(exp.AggFunc) if isinstance(where, exp.Where) else None
    if found is not None:
        raise SqlError(pos(found), f"an aggregate ({found.sql(dialect='spark')}) cannot stand "
                       "in WHERE: WHERE is evaluated on single records, before grouping",
                       "filter groups with HAVING instead")

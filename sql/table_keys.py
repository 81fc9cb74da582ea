"""The key of a table-table join result (LANGUAGE.md, "The key of the result").

A result table is keyed so that its rows stay unique:

- ``primary``: the equalities join the two primary keys; the result keeps
  that key (the present side's, in a one-sided row of an outer join);
- ``left`` / ``right``: a foreign-key join, one side's key equals an
  expression of the other side's columns; the result takes the referring
  side's key (ksqlDB), and the join is INNER or the referring side's outer
  join (LEFT when the left refers, RIGHT when the right does);
- ``pair``: any other join: the struct of both inputs' keys, ``{l, r}``
  (beyond ksqlDB, which has no many-to-many join).

The physical join finds the result rows a change affects through this key.
"""

from __future__ import annotations

from collections.abc import Sequence

from splice.sql.columns import KEY
from splice.sql.conditions import SplitCondition
from splice.sql.plan import JoinType, Projection
from splice.sql.scope import Compiled, Input
from splice.sql.types import struct_type
from sqlglot import exp


def is_input_key(exprs: list[Compiled], inp: Input) -> bool:
    """Whether the join expressions are exactly the input's primary key."""
    nodes = [e.node for e in exprs]
    if len(nodes) == 1 and isinstance(nodes[0], exp.Column) and nodes[0].name == KEY:
        return True
    if not all(isinstance(n, exp.Column) for n in nodes):
        return False
    names = tuple(n.name.lower() for n in nodes if n is not None)
    return bool(names) and names == tuple(k.lower() for k in inp.relation.key_columns)


def table_join_key(condition: SplitCondition, left: Input, right: Input,
                   join_type: JoinType) -> tuple[str, str, str]:
    """(mode, key SQL over l and r, key type) of a table-table join."""
    lexprs = [e.left for e in condition.equalities]
    rexprs = [e.right for e in condition.equalities]
    left_pk = bool(lexprs) and is_input_key(lexprs, left)
    right_pk = bool(rexprs) and is_input_key(rexprs, right)
    if left_pk and right_pk:
        return "primary", "coalesce(l.`_key`, r.`_key`)", left.relation.key_type
    if right_pk and join_type in (JoinType.INNER, JoinType.LEFT):
        return "left", "l.`_key`", left.relation.key_type
    if left_pk and join_type in (JoinType.INNER, JoinType.RIGHT):
        return "right", "r.`_key`", right.relation.key_type
    key_type = struct_type([("l", left.relation.key_type), ("r", right.relation.key_type)])
    return "pair", "named_struct('l', l.`_key`, 'r', r.`_key`)", key_type


def _norm(sql: str) -> str:
    return "".join(sql.split()).lower()


def mirrored_key_columns(columns: Sequence[Projection], mode: str | None,
                         join_type: JoinType, left: Input, right: Input) -> tuple[str, ...]:
    """The output columns of a table-table join that hold its key, in the
    key's order (``Relation.key_columns``); empty when the key is not in
    the output whole.

    A primary-key join's key is both inputs' key in an inner join, the
    preserved side's in a LEFT or RIGHT join, and their COALESCE in a FULL
    join; a foreign-key join's is the referring side's. A later stage of a
    chain that joins on such a column is joining on the key again, so it is
    a key join too (ksqlDB keys ``T1 JOIN T2 ON T1.ID = T2.ID FULL JOIN T3
    ON T1.ID = T3.ID`` by the ID)."""
    lk, rk = left.relation.key_columns, right.relation.key_columns
    if mode == "primary" and lk and len(lk) == len(rk):
        refs = [(f"l.`{a}`", f"r.`{b}`") for a, b in zip(lk, rk, strict=True)]
        options = [{JoinType.INNER: {lc, rc}, JoinType.LEFT: {lc}, JoinType.RIGHT: {rc},
                    JoinType.FULL: {f"coalesce({lc}, {rc})", f"coalesce({rc}, {lc})"}}
                   .get(join_type, set()) for lc, rc in refs]
    elif mode == "left" and lk:
        options = [{f"l.`{a}`"} for a in lk]
    elif mode == "right" and rk:
        options = [{f"r.`{b}`"} for b in rk]
    else:
        return ()
    found = []
    for wanted in options:
        normalized = {_norm(o) for o in wanted}
        name = next((p.name for p in columns if _norm(p.expr) in normalized), None)
        if name is None:
            return ()
        found.append(name)
    return tuple(found)

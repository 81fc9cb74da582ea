"""How deep an expression may nest: what Spark's parser takes.

Spark parses the SQL of every step's expressions (``F.expr``) and analyzes
it by recursion: in a local session a chain of 600 ``+`` overflowed the
JVM's stack ("java.lang.StackOverflowError" while writing micro-batch 0),
300 nested function calls were FAILED_TO_PARSE_TOO_COMPLEX, while 450
``+``, 250 nested CASE and 200 nested calls or parentheses ran (measured
with ``splice test``, issue 56). So an expression may be at most
:data:`MAX_NESTING` levels deep: one level per operator, function call,
parenthesis or CASE (:func:`deepest_expression`), except AND and OR, whose
chains Spark's parser balances itself (3,000 conjuncts ran, in WHERE and
in ON). A deeper one is refused with its position, its depth and the limit.

Python needs care too. sqlglot parses by recursive descent: each level of
parentheses, call, CASE or prefix operator costs it about twenty frames,
so Python's default limit of 1000 frames gave out at about 45 levels
(reported as a syntax error). A statement is therefore first measured on
its tokens (:func:`too_deep`: brackets, CASE and runs of prefix operators)
and refused before it is parsed when it is too deep, and
:func:`ensure_stack` gives the interpreter the frames :data:`MAX_NESTING`
levels need (pure Python frames: CPython 3.11 does not grow the C stack for
them). Chains of one operator are built and walked in loops, by sqlglot
and by Splice's own walks (``splice.sql.scope.expression_nullable``,
``splice.sql.conditions.conjuncts``, ``splice.sql.aggregate``), whatever their length.
"""

from __future__ import annotations

import sys

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

# The deepest expression a statement may have (see above; the Spark test of
# tests/sql/test_deep_expressions.py runs every shape at this depth).
MAX_NESTING = 200

# Python frames per level of nesting, with room: the most sqlglot's parser
# took was 24 (function calls), its type annotator fewer.
_FRAMES_PER_LEVEL = 40
_STACK = 5_000 + _FRAMES_PER_LEVEL * MAX_NESTING

_OPEN = frozenset({TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.CASE})
_CLOSE = frozenset({TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.END})
_PREFIX = frozenset({TokenType.NOT, TokenType.DASH, TokenType.PLUS, TokenType.TILDE})


def ensure_stack() -> None:
    """Raise Python's recursion limit to what :data:`MAX_NESTING` levels
    need (never lower it: the process may need more for its own reasons)."""
    if sys.getrecursionlimit() < _STACK:
        sys.setrecursionlimit(_STACK)


def too_deep(tokens: list[Token]) -> tuple[int, Token] | None:
    """The depth of ``tokens`` and the token where it first passes
    :data:`MAX_NESTING`, or ``None`` when it stays within it.

    The depth at a token is the number of brackets and CASEs open there
    plus the run of prefix operators just before it (``NOT NOT x`` is two
    deep at ``x``; a run's first ``-`` may be binary, which counts one too
    many, on the safe side)."""
    depth = 0
    run = 0
    deepest = 0
    first: Token | None = None
    for token in tokens:
        kind = token.token_type
        if kind in _PREFIX:
            run += 1
        else:
            run = 0
        if kind in _OPEN:
            depth += 1
        elif kind in _CLOSE and depth > 0:
            depth -= 1
        level = depth + run
        if level > deepest:
            deepest = level
            if first is None and level > MAX_NESTING:
                first = token
    return None if first is None else (deepest, first)


def _level(node: exp.Expression) -> int:
    """The levels ``node`` adds to an expression's depth: one per operator,
    function call, parenthesis, CASE; none for names, literals, the clauses
    of a query, a CASE's branches (its WHEN ... THEN), nor AND and OR:
    Spark's parser makes a chain of them a balanced tree (its AstBuilder),
    and takes thousands (3,000 measured in ON and WHERE)."""
    if isinstance(node, (exp.And, exp.Or)):
        return 0
    if isinstance(node, exp.If) and isinstance(node.parent, exp.Case):
        return 0
    return int(isinstance(node, (exp.Binary, exp.Unary, exp.Func, exp.Case, exp.Bracket)))


def deepest_expression(node: exp.Expression) -> tuple[int, exp.Expression] | None:
    """The depth of the deepest expression in ``node`` and that expression
    (its outermost operator), when it is deeper than :data:`MAX_NESTING`;
    ``None`` otherwise. A loop, not a recursion: it measures what is too
    deep to recurse over."""
    deepest: tuple[int, exp.Expression] | None = None
    stack: list[tuple[exp.Expression, int, exp.Expression | None]] = [(node, 0, None)]
    while stack:
        current, above, top = stack.pop()
        depth = above + _level(current)
        if top is None and depth > 0:
            top = current
        if depth > MAX_NESTING and top is not None and (deepest is None
                                                        or depth > deepest[0]):
            deepest = (depth, top)
        stack.extend((child, depth, top) for child in current.iter_expressions())
    return deepest

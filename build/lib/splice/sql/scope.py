"""Name resolution and expression compilation.

A :class:`Scope` is what one SELECT can see: its inputs, each under one or
more aliases. Resolving a column reference finds the input and column it
means (qualified, unqualified-but-unique, a facet such as ``_key.a`` or
``_value.f``, a struct field); compiling an expression rewrites every column
reference to the physical name the step will see at run time and computes the
expression's type with sqlglot's type annotator.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from splice.sql.columns import KEY, ROWTIME
from splice.sql.errors import Position, SqlError
from splice.sql.plan import Relation
from splice.sql.types import UNKNOWN, struct_type
from sqlglot import exp
from sqlglot.errors import OptimizeError, SchemaError
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.schema import MappingSchema

VALUE = "_value"


@dataclass
class AliasView:
    """One alias of an input and the columns it names.

    ``columns`` maps a lower-cased column name to the physical column in the
    input's rows (the same name for a plain input; a prefixed one for an input
    that is the result of an earlier join in a chain).
    """

    name: str
    columns: dict[str, str]
    has_key: bool = True


@dataclass(frozen=True)
class WindowedBy:
    """The RisingWave window function an input is read through:
    ``TUMBLE(s, ts, size)`` or ``HOP(s, ts, slide, size)``."""

    kind: str  # "TUMBLE" or "HOP"
    size_ms: int
    slide_ms: int | None
    position: Position


@dataclass
class Input:
    """One input of a SELECT, seen at run time under ``side``: ``t`` for a
    single-input step, ``l`` and ``r`` for the two inputs of a join.

    ``optional`` marks the side an outer join may leave empty: its columns
    are nullable in the result. ``windowed`` is set when the input is a
    ``TUMBLE`` / ``HOP`` of a stream.
    """

    side: str
    step_id: str
    relation: Relation
    views: list[AliasView]
    position: Position
    node: exp.Expression | None = None
    optional: bool = False
    windowed: WindowedBy | None = None

    @property
    def alias(self) -> str:
        return self.views[0].name

    def column_type(self, physical: str) -> str:
        col = self.relation.column(physical)
        return col.type if col else UNKNOWN


@dataclass
class Resolved:
    """A column reference resolved to an input."""

    input: Input
    node: exp.Expression  # the physical reference, qualified by side
    type: str
    facet: str  # "key", "value", "rowtime", "whole_value", "whole_key"
    column: str | None = None  # physical value column, for value references
    fields: tuple[str, ...] = ()
    nullable: bool = True


@dataclass
class Compiled:
    """An expression compiled against a scope."""

    sql: str
    type: str
    inputs: set[str] = field(default_factory=set)  # sides referenced
    node: exp.Expression | None = None  # the rewritten expression
    nullable: bool = True


def column_parts(column: exp.Column) -> list[str]:
    return [p.name for p in column.parts]


def field_type(type_str: str, name: str) -> str:
    """The type of field ``name`` in a struct type string, or UNKNOWN."""
    if not type_str.startswith("struct<"):
        return UNKNOWN
    try:
        dt = exp.DataType.build(type_str, dialect="spark")
    except Exception:
        return UNKNOWN
    for coldef in dt.expressions:
        if coldef.name.lower() == name.lower():
            kind = coldef.args.get("kind")
            return kind.sql(dialect="spark").lower() if kind else UNKNOWN
    return UNKNOWN


def qualified(side: str, name: str, fields: tuple[str, ...] = ()) -> exp.Expression:
    node: exp.Expression = exp.column(
        exp.to_identifier(name, quoted=True), table=exp.to_identifier(side, quoted=False)
    )
    for f in fields:
        node = exp.Dot(this=node, expression=exp.to_identifier(f, quoted=True))
    return node


class Scope:
    """The inputs one SELECT can see."""

    def __init__(self, inputs: list[Input], file: str, text: str) -> None:
        self.inputs = inputs
        self.file = file
        self.text = text

    # -- errors -------------------------------------------------------------
    def position(self, node: exp.Expression, fallback: Position) -> Position:
        from splice.sql.script import node_position

        return node_position(node, self.text, self.file, fallback)

    def _views(self) -> list[tuple[Input, AliasView]]:
        return [(i, v) for i in self.inputs for v in i.views]

    def _view(self, alias: str) -> tuple[Input, AliasView] | None:
        for i, v in self._views():
            if v.name.lower() == alias.lower():
                return i, v
        return None

    def alias_names(self) -> list[str]:
        return [v.name for _, v in self._views()]

    # -- resolution ---------------------------------------------------------
    def resolve(self, column: exp.Column, where: Position) -> Resolved:
        parts = column_parts(column)
        pos = self.position(column, where)
        text = ".".join(parts)
        target: tuple[Input, AliasView] | None = None
        rest = parts
        if len(parts) >= 2 and (found := self._view(parts[0])) is not None:
            target, rest = found, parts[1:]
        head = rest[0]
        if head.lower() == KEY:
            return self._resolve_key(target, rest[1:], text, pos)
        if head.lower() == VALUE:
            if len(rest) == 1:
                return self._whole_value(target or self._single(text, pos))
            rest = rest[1:]
            head = rest[0]
        if head.upper() == ROWTIME and len(rest) == 1:
            inp = target[0] if target else self._single(text, pos, rowtime=True)[0]
            return Resolved(inp, qualified(inp.side, ROWTIME), "timestamp", "rowtime",
                            nullable=inp.optional)
        candidates = [target] if target else self._views()
        matches = [(i, v) for i, v in candidates if head.lower() in v.columns]
        if not matches:
            raise self._unknown_column(head, target, pos, text)
        if len({(i.side, v.columns[head.lower()]) for i, v in matches}) > 1:
            names = ", ".join(f"{v.name}.{head}" for _, v in matches)
            raise SqlError(pos, f"column '{head}' is ambiguous: more than one input has it",
                           f"qualify it with its input's name or alias: {names}")
        inp, view = matches[0]
        physical = view.columns[head.lower()]
        typ = inp.column_type(physical)
        fields = tuple(rest[1:])
        for f in fields:
            typ = field_type(typ, f)
        spec = inp.relation.column(physical)
        nullable = inp.optional or bool(fields) or spec is None or spec.nullable
        return Resolved(inp, qualified(inp.side, physical, fields), typ, "value",
                        column=physical, fields=fields, nullable=nullable)

    @staticmethod
    def _whole_value(target: tuple[Input, AliasView]) -> Resolved:
        """``_value`` as one struct of the input's value columns."""
        inp, view = target
        args: list[exp.Expression] = []
        fields: list[tuple[str, str]] = []
        for physical in view.columns.values():
            args += [exp.Literal.string(physical), qualified(inp.side, physical)]
            fields.append((physical, inp.column_type(physical)))
        node = exp.Anonymous(this="named_struct", expressions=args)
        return Resolved(inp, node, struct_type(fields), "whole_value", nullable=inp.optional)

    def _single(self, text: str, pos: Position, rowtime: bool = False
                ) -> tuple[Input, AliasView]:
        if len(self.inputs) == 1:
            return self.inputs[0], self.inputs[0].views[0]
        what = "ROWTIME" if rowtime else text
        raise SqlError(pos, f"'{what}' is ambiguous in a join: each input has one",
                       f"qualify it with an input's alias: "
                       f"{', '.join(a + '.' + what for a in self.alias_names())}")

    def _resolve_key(self, target: tuple[Input, AliasView] | None, fields: list[str],
                     text: str, pos: Position) -> Resolved:
        inp, view = target or self._single(text, pos)
        if not view.has_key:
            raise SqlError(pos, f"'{view.name}._key' is not available here: '{view.name}' was "
                           "joined in an earlier step (a stage of this chain, or the join "
                           "before GROUP BY), which re-keyed it",
                           f"project the key in that stage (for example "
                           f"'{view.name}._key AS {view.name}_key') and use that column")
        typ = inp.relation.key_type
        for f in fields:
            typ = field_type(typ, f)
            if typ == UNKNOWN:
                raise SqlError(pos, f"the key of '{view.name}' has no field '{f}' "
                               f"(its type is {inp.relation.key_type})",
                               "use one of the key's fields, or _key for the whole key")
        facet = "key" if fields else "whole_key"
        return Resolved(inp, qualified(inp.side, KEY, tuple(fields)), typ, facet,
                        fields=tuple(fields))

    def _unknown_column(self, name: str, target: tuple[Input, AliasView] | None,
                        pos: Position, text: str) -> SqlError:
        views = [target] if target else self._views()
        known = sorted({c for _, v in views for c in v.columns})
        originals = sorted({
            col.name for i, _ in views for col in i.relation.columns
            if col.name.lower() in known
        })
        close = difflib.get_close_matches(name.lower(), known, n=1)
        where = f" in '{target[1].name}'" if target else ""
        hint = f"did you mean '{close[0]}'? " if close else ""
        return SqlError(pos, f"unknown column '{text}'{where}",
                        f"{hint}the columns are: {', '.join(originals) or '(none)'}")

    # -- compilation --------------------------------------------------------
    def compile(self, node: exp.Expression, where: Position) -> Compiled:
        """Rewrite column references to physical ones and type the result."""
        real: dict[str, exp.Expression] = {}
        types: dict[str, str] = {}
        nullables: dict[str, bool] = {}
        sides: set[str] = set()

        def swap(n: exp.Expression) -> exp.Expression:
            if isinstance(n, exp.Column) and not isinstance(n.this, exp.Star):
                r = self.resolve(n, where)
                token = f"__c{len(real)}"
                real[token] = r.node
                types[token] = r.type
                nullables[token] = r.nullable
                sides.add(r.input.side)
                return exp.column(token, table="__s")
            return n

        rewritten = node.copy().transform(swap)
        typ = self._type_of(rewritten, types)
        nullable = expression_nullable(rewritten, nullables)

        def back(n: exp.Expression) -> exp.Expression:
            if isinstance(n, exp.Column) and n.name in real and n.table == "__s":
                return real[n.name].copy()
            return n

        final = rewritten.transform(back)
        if len(self.inputs) == 1:
            final = final.transform(_unqualify)
        return Compiled(sql=final.sql(dialect="spark"), type=typ, inputs=sides, node=final,
                        nullable=nullable)

    @classmethod
    def _type_of(cls, rewritten: exp.Expression, types: dict[str, str]) -> str:
        """The Spark type of an expression whose columns are the typed tokens
        ``__s.__cN``. Aggregate calls are typed here, as Spark types them
        (sqlglot leaves SUM, MIN and MAX unknown), and stand in the rest of
        the expression as typed tokens."""
        types = dict(types)

        def typed_aggregate(n: exp.Expression) -> exp.Expression:
            if isinstance(n, exp.AggFunc):
                arg = n.this if isinstance(n.this, exp.Expression) else None
                arg_type = (UNKNOWN if arg is None or isinstance(arg, exp.Star)
                            else cls._type_of(arg, types))
                token = f"__a{len(types)}"
                types[token] = aggregate_type(n, arg_type)
                return exp.column(token, table="__s")
            return n

        if rewritten.find(exp.AggFunc) is not None:
            rewritten = rewritten.copy().transform(typed_aggregate)
            if isinstance(rewritten, exp.Column) and rewritten.name in types:
                return types[rewritten.name]
        schema_types = {k: (v if v != UNKNOWN else "string") for k, v in types.items()}
        schema_types["__none"] = "int"  # a schema table needs a column
        try:
            schema = MappingSchema({"__s": schema_types}, dialect="spark")
            select = exp.select(rewritten.copy()).from_("__s")
            annotated = annotate_types(select, schema=schema, dialect="spark")
            dt = annotated.expressions[0].type
        except (OptimizeError, SchemaError, ValueError, KeyError, TypeError, AttributeError):
            return UNKNOWN
        if dt is None or dt.this == exp.DType.UNKNOWN:
            return UNKNOWN
        return dt.sql(dialect="spark").lower()


_INTEGRAL = {"tinyint", "smallint", "int", "bigint"}


def aggregate_type(call: exp.AggFunc, arg_type: str) -> str:
    """The Spark result type of an aggregate call over an argument of
    ``arg_type``."""
    if isinstance(call, exp.Count):
        return "bigint"
    if isinstance(call, (exp.Min, exp.Max)):
        return arg_type
    decimal = _decimal(arg_type)
    if isinstance(call, exp.Sum):
        if arg_type in _INTEGRAL:
            return "bigint"
        if arg_type in ("float", "double"):
            return "double"
        if decimal:
            return f"decimal({min(38, decimal[0] + 10)},{decimal[1]})"
        return UNKNOWN
    if isinstance(call, exp.Avg):
        if decimal:
            return f"decimal({min(38, decimal[0] + 4)},{min(38, decimal[1] + 4)})"
        return "double"
    return UNKNOWN


def _decimal(type_str: str) -> tuple[int, int] | None:
    if not type_str.startswith("decimal"):
        return None
    inner = type_str.removeprefix("decimal").strip("()")
    parts = [p.strip() for p in inner.split(",")] if inner else ["10", "0"]
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        return None
    return int(parts[0]), int(parts[1])


# Expressions that are NULL only when one of their operands is.
_NULL_PROPAGATING = (exp.Add, exp.Sub, exp.Mul, exp.Neg, exp.Paren, exp.Alias, exp.EQ,
                     exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Not, exp.Upper, exp.Lower,
                     exp.Length, exp.Substring, exp.Concat, exp.DPipe)


def expression_nullable(node: exp.Expression, tokens: dict[str, bool]) -> bool:
    """Whether an expression over the tokens ``__s.__cN`` (whose
    nullability is ``tokens``) may be NULL. Conservative: anything not known
    to be non-null is nullable.

    Iterative (an explicit stack, operands before their operator): a chain
    of a thousand ``+`` is a tree a thousand deep, past Python's recursion
    limit."""
    known: dict[int, bool] = {}
    stack: list[tuple[exp.Expression, bool]] = [(node, False)]
    while stack:
        current, operands_done = stack.pop()
        leaf = _leaf_nullable(current, tokens)
        if leaf is not None:
            known[id(current)] = leaf
            continue
        operands = _operands(current)
        if not operands_done:
            stack.append((current, True))
            stack.extend((o, False) for o in operands)
            continue
        values = [known[id(o)] for o in operands]
        known[id(current)] = all(values) if isinstance(current, exp.Coalesce) else any(values)
    return known[id(node)]


def _leaf_nullable(node: exp.Expression, tokens: dict[str, bool]) -> bool | None:
    """The nullability of a node that does not depend on its operands;
    ``None`` for one that does (a COALESCE or a NULL-propagating operator)."""
    if isinstance(node, exp.Column):
        return tokens.get(node.name, True)
    if isinstance(node, exp.Null):
        return True
    if isinstance(node, (exp.Literal, exp.Boolean, exp.Star, exp.Count)):
        return False
    if isinstance(node, exp.Coalesce):
        return None if _operands(node) else True
    if isinstance(node, _NULL_PROPAGATING):
        return None
    return True


def _operands(node: exp.Expression) -> list[exp.Expression]:
    if isinstance(node, exp.Coalesce):
        return [a for a in (node.this, *node.expressions) if isinstance(a, exp.Expression)]
    return list(node.iter_expressions())


def _unqualify(n: exp.Expression) -> exp.Expression:
    if isinstance(n, exp.Column) and n.table == "t":
        return exp.column(n.this.copy())
    return n


def plain_view(alias: str, relation: Relation) -> AliasView:
    return AliasView(name=alias, columns={c.name.lower(): c.name for c in relation.columns})

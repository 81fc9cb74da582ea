"""Projection rules (Lenses' projection page, LANGUAGE.md section 3).

A projection has a source (an expression, a key or value field, a whole
facet, a constant) and a target: a value field (the default), a nested value
field (``AS x.a``), a key field (``AS _key.a``), or a whole facet (``AS _key``,
``AS _value``). Targets form a tree per facet; the rules reject a nested
alias under a non-struct, an alias that overrides earlier fields, duplicate
names, and a second projection onto one whole facet.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from splice.sql.columns import KEY, ROWTIME
from splice.sql.errors import Position, SqlError
from splice.sql.expressions import PathAlias
from splice.sql.plan import ColumnSpec, Projection
from splice.sql.scope import VALUE, Compiled, Input, Scope, column_parts
from splice.sql.types import struct_type
from sqlglot import exp


@dataclass
class _Node:
    """A target: a leaf holds an expression, a struct holds children."""

    leaf: Compiled | None = None
    children: dict[str, _Node] = field(default_factory=dict)
    display: str = ""


@dataclass
class _Facet:
    name: str
    root: _Node = field(default_factory=_Node)
    whole: Compiled | None = None

    def empty(self) -> bool:
        return self.whole is None and not self.root.children


@dataclass
class ProjectionResult:
    """The value columns of the output, and its key when the projection sets it."""

    columns: list[Projection]
    specs: list[ColumnSpec]
    key: Compiled | None
    star_key: bool  # `*` over one input: the input's key is kept
    kept_key_columns: tuple[str, ...] = ()
    # Every top-level value column that is one expression (not a struct built
    # from several), by output name.
    value_leaves: dict[str, Compiled] = field(default_factory=dict)
    # Every expression projected into the key (the whole key, or its fields).
    key_leaves: list[Compiled] = field(default_factory=list)


@dataclass
class StarColumn:
    """One column that ``*`` expands to."""

    input: Input
    physical: str
    name: str


class ProjectionBuilder:
    """Builds the output of one SELECT from its projection list."""

    def __init__(self, scope: Scope, where: Position, using: set[str] | None = None) -> None:
        self.scope = scope
        self.where = where
        self.value = _Facet(VALUE)
        self.key = _Facet(KEY)
        self.using = using or set()
        self.star_key = False

    # -- public -------------------------------------------------------------
    def build(self, items: list[exp.Expression]) -> ProjectionResult:
        for item in items:
            self._item(item)
        return self._result()

    # -- items --------------------------------------------------------------
    def _item(self, item: exp.Expression) -> None:
        pos = self.scope.position(item, self.where)
        if isinstance(item, exp.Star):
            self._star(None, pos)
            return
        if isinstance(item, exp.Column) and isinstance(item.this, exp.Star):
            self._star(item.table, pos)
            return
        if isinstance(item, PathAlias):
            self._target(item.parts, item.this, pos, ".".join(item.parts))
            return
        if isinstance(item, exp.Alias):
            self._target([item.alias], item.this, pos, item.alias)
            return
        if isinstance(item, exp.Column):
            parts = column_parts(item)
            last = parts[-1]
            if last.upper() == ROWTIME and len(parts) <= 2:
                return  # every output carries ROWTIME; projecting it adds nothing
            if last.lower() == KEY:
                self._target([KEY], item, pos, KEY)
                return
            if last.lower() == VALUE:
                raise SqlError(pos, "the whole value facet '_value' needs a name when "
                               "projected", "give it an alias, for example _value AS old_value")
            self._target([last], item, pos, last)
            return
        self._target([item.sql()], item, pos, item.sql())

    def _star(self, qualifier: str | None, pos: Position) -> None:
        for col in self.star_columns(qualifier, pos):
            spec = col.input.relation.column(col.physical)
            compiled = Compiled(
                sql=f"{col.input.side}.`{col.physical}`" if len(self.scope.inputs) > 1
                else f"`{col.physical}`",
                type=col.input.column_type(col.physical), inputs={col.input.side},
                nullable=col.input.optional or spec is None or spec.nullable)
            self._place(self.value, [col.name], compiled, pos, col.name)
        if qualifier is None and len(self.scope.inputs) == 1:
            self.star_key = True

    def star_columns(self, qualifier: str | None, pos: Position) -> list[StarColumn]:
        """What ``*`` or ``alias.*`` expands to; a name both inputs have is
        prefixed with its input's alias (USING columns appear once)."""
        views = [(i, v) for i in self.scope.inputs for v in i.views]
        if qualifier:
            chosen = [(i, v) for i, v in views if v.name.lower() == qualifier.lower()]
            if not chosen:
                raise SqlError(pos, f"unknown input '{qualifier}' in '{qualifier}.*'",
                               f"use one of: {', '.join(v.name for _, v in views)}")
        else:
            chosen = views
        counts: dict[str, int] = {}
        for _, v in views:
            for name in v.columns:
                counts[name] = counts.get(name, 0) + 1
        out: list[StarColumn] = []
        seen_using: set[str] = set()
        for inp, view in chosen:
            for lower, physical in view.columns.items():
                if lower in self.using:
                    if lower in seen_using:
                        continue
                    seen_using.add(lower)
                    out.append(StarColumn(inp, physical, physical))
                    continue
                clash = counts[lower] > 1 and len(views) > 1
                out.append(StarColumn(inp, physical,
                                      _prefixed(view.name, lower, physical) if clash
                                      else physical))
        return out

    def _target(self, parts: list[str], source: exp.Expression, pos: Position,
                display: str) -> None:
        head = parts[0].lower()
        facet = self.value
        if head == KEY:
            facet, parts = self.key, parts[1:]
        elif head == VALUE:
            parts = parts[1:]
        compiled = self.scope.compile(source, self.where)
        if not parts:
            if facet.whole is not None:
                raise SqlError(pos, f"only one projection may target the whole {facet.name} "
                               f"facet, and '{display}' is the second",
                               f"project the other expressions onto fields, for example "
                               f"'... AS {facet.name}.name'")
            if facet.root.children:
                raise SqlError(pos, f"'{display}' targets the whole {facet.name} facet, which "
                               "already has fields from earlier projections",
                               f"project onto a field instead, for example "
                               f"'... AS {facet.name}.name'")
            facet.whole = compiled
            return
        if facet.whole is not None:
            raise SqlError(pos, f"'{display}' adds a field to the {facet.name} facet, which an "
                           "earlier projection set whole",
                           f"drop the whole-{facet.name} projection or project fields only")
        self._place(facet, parts, compiled, pos, display)

    def _place(self, facet: _Facet, parts: list[str], compiled: Compiled, pos: Position,
               display: str) -> None:
        node = facet.root
        walked: list[str] = []
        for part in parts[:-1]:
            walked.append(part)
            child = node.children.get(part.lower())
            if child is None:
                child = node.children[part.lower()] = _Node(display=part)
            elif child.leaf is not None:
                raise SqlError(pos, f"alias '{display}' adds a field under '{'.'.join(walked)}',"
                               " which an earlier projection made a value, not a struct",
                               f"choose another name than '{'.'.join(walked)}' for one of them")
            node = child
        last = parts[-1]
        existing = node.children.get(last.lower())
        if existing is not None:
            if existing.children:
                raise SqlError(pos, f"alias '{display}' would override the fields set earlier "
                               f"under '{display}'", "give this projection another name")
            if len(parts) == 1 and facet is self.value:
                raise SqlError(pos, f"two output columns are named '{display}'",
                               "give one of them an alias with AS")
            raise SqlError(pos, f"duplicate alias '{display}'", "give one of them another name")
        node.children[last.lower()] = _Node(leaf=compiled, display=last)

    # -- result -------------------------------------------------------------
    def _result(self) -> ProjectionResult:
        columns: list[Projection] = []
        specs: list[ColumnSpec] = []
        leaves: dict[str, Compiled] = {}
        if self.value.whole is not None:
            columns.append(Projection(name=VALUE, expr=self.value.whole.sql))
            specs.append(ColumnSpec(name=VALUE, type=self.value.whole.type,
                                    nullable=self.value.whole.nullable))
            leaves[VALUE] = self.value.whole
        for child in self.value.root.children.values():
            sql, typ = _render(child)
            columns.append(Projection(name=child.display, expr=sql))
            # A struct built by named_struct is never NULL itself.
            nullable = child.leaf.nullable if child.leaf is not None else False
            specs.append(ColumnSpec(name=child.display, type=typ, nullable=nullable))
            if child.leaf is not None:
                leaves[child.display] = child.leaf
        key: Compiled | None = None
        if self.key.whole is not None:
            key = self.key.whole
        elif self.key.root.children:
            sql, typ = _render(self.key.root)
            key = Compiled(sql=sql, type=typ)
        key_leaves = [self.key.whole] if self.key.whole is not None else _leaves(self.key.root)
        return ProjectionResult(columns=columns, specs=specs, key=key, star_key=self.star_key,
                                value_leaves=leaves, key_leaves=key_leaves)


def _leaves(node: _Node) -> list[Compiled]:
    if node.leaf is not None:
        return [node.leaf]
    return [leaf for child in node.children.values() for leaf in _leaves(child)]


def _prefixed(alias: str, lower: str, physical: str) -> str:
    """``alias_name`` for a column both inputs have. A column that an earlier
    stage of a chain already prefixed with the same alias keeps its name
    (``o_ts``, not ``o_o_ts``)."""
    if physical.lower() != lower and physical.lower() == f"{alias}_{lower}".lower():
        return physical
    return f"{alias}_{physical}"


def _render(node: _Node) -> tuple[str, str]:
    """Spark SQL and type for a target node: a leaf's expression, or a
    named_struct of the children."""
    if node.leaf is not None:
        return node.leaf.sql, node.leaf.type
    parts: list[str] = []
    fields: list[tuple[str, str]] = []
    for child in node.children.values():
        sql, typ = _render(child)
        escaped = child.display.replace("'", "''")
        parts.append(f"'{escaped}', {sql}")
        fields.append((child.display, typ))
    return f"named_struct({', '.join(parts)})", struct_type(fields)

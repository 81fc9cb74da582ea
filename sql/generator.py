"""The Splice generator: Spark's, printing the nodes of :mod:`splice.sql.expressions` and
the Splice arguments of standard nodes back as Splice SQL.

``expr.sql(dialect="spark")`` still gives valid Spark SQL: only this
generator knows the streaming clauses.
"""

from __future__ import annotations

import typing as t

from splice.sql import expressions
from splice.sql.parsing.lexical import is_bare_name
from sqlglot import exp
from sqlglot.dialects.spark import Spark


class SpliceGenerator(Spark.Generator):
    """Spark's generator with Splice's statements, windows and names."""

    TRANSFORMS: t.ClassVar = {
        **Spark.Generator.TRANSFORMS,
        expressions.Duration: lambda self, e: self.duration_sql(e),
        expressions.Within: lambda self, e: self.within_sql(e),
        expressions.StreamWindow: lambda self, e: self.streamwindow_sql(e),
        expressions.WindowTable: lambda self, e: self.windowtable_sql(e),
        expressions.PathAlias: lambda self, e: self.pathalias_sql(e),
        expressions.Watermark: lambda self, e: self.watermark_sql(e),
        expressions.CreateSource: lambda self, e: self.createsource_sql(e),
        expressions.CreateAs: lambda self, e: self.createas_sql(e),
        expressions.InsertInto: lambda self, e: self.insertinto_sql(e),
        expressions.WithStep: lambda self, e: self.withstep_sql(e),
        expressions.SetOption: lambda self, e: self.setoption_sql(e),
        expressions.Explain: lambda self, e: self.explain_sql(e),
    }

    # Where an unquoted hyphenated name reads back as one name.
    _HYPHEN_NAME_PARENTS: t.ClassVar[tuple[type[exp.Expr], ...]] = (
        exp.Table,
        exp.TableAlias,
        exp.Alias,
        expressions.PathAlias,
    )
    _STATEMENT_NAME_PARENTS: t.ClassVar[tuple[type[exp.Expr], ...]] = (
        expressions.CreateSource,
        expressions.CreateAs,
        expressions.InsertInto,
        expressions.WithStep,
    )

    def identifier_sql(self, expression: exp.Identifier) -> str:
        """Hyphenated names print unquoted where a name stands (``FROM
        input-topic``, ``AS old-key``) and dotted statement names whole
        (``CREATE STREAM stocks.order_quantity``); elsewhere, and in Spark,
        they are quoted."""
        parent = expression.parent
        name = expression.name
        if isinstance(parent, self._STATEMENT_NAME_PARENTS):
            bare = ("-" in name or "." in name) and is_bare_name(name, "-.")
        else:
            bare = isinstance(parent, self._HYPHEN_NAME_PARENTS) and (
                "-" in name and is_bare_name(name, "-")
            )
        return name if bare else super().identifier_sql(expression)

    # -- durations and windows

    def duration_sql(self, expression: expressions.Duration) -> str:
        amount = expression.this.name
        unit = str(expression.args["unit"])
        return f"{amount} {unit}" if amount == "1" else f"{amount} {unit}S"

    def interval_duration_sql(self, expression: expressions.Duration) -> str:
        return f"INTERVAL '{expression.this.name}' {expression.args['unit']}"

    def within_sql(self, expression: expressions.Within) -> str:
        after = expression.args.get("expression")
        if after is None:
            return f"WITHIN {self.sql(expression, 'this')}"
        return f"WITHIN ({self.sql(expression, 'this')}, {self.sql(after)})"

    def streamwindow_sql(self, expression: expressions.StreamWindow) -> str:
        kind = expression.args["kind"]
        width = expression.this
        if width is None:
            extent = "CURRENT ROW"
        elif isinstance(width, expressions.Duration):
            extent = f"{self.interval_duration_sql(width)} PRECEDING"
        else:
            extent = f"{self.sql(width)} PRECEDING"
        return f"OVER ({kind} {extent})"

    def windowtable_sql(self, expression: expressions.WindowTable) -> str:
        args = [self.sql(expression, "this"), self.sql(expression, "column")]
        slide = expression.args.get("slide")
        if slide is not None:
            args.append(self.interval_duration_sql(slide))
        args.append(self.interval_duration_sql(expression.args["size"]))
        alias = self.sql(expression, "alias")
        alias = f" AS {alias}" if alias else ""
        return f"{expression.args['kind']}({', '.join(args)}){alias}"

    def pathalias_sql(self, expression: expressions.PathAlias) -> str:
        path = ".".join(self.sql(part) for part in expression.args["path"])
        return f"{self.sql(expression, 'this')} AS {path}"

    # -- SELECT, tables, joins

    def select_sql(self, expression: exp.Select) -> str:
        kind = expression.args.get("result_kind")
        if not kind:
            return super().select_sql(expression)
        select = expression.copy()
        select.set("result_kind", None)
        select.set(
            "operation_modifiers",
            [exp.var(kind), *(select.args.get("operation_modifiers") or [])],
        )
        return super().select_sql(select)

    def table_sql(self, expression: exp.Table, sep: str = " AS ") -> str:
        window = expression.args.get("stream_window")
        proctime = expression.args.get("proctime")
        if window is None and not proctime:
            return super().table_sql(expression, sep)
        parts = [self.table_parts(expression)]
        if window is not None:
            parts.append(self.sql(window))
        if proctime:
            parts.append("FOR SYSTEM_TIME AS OF PROCTIME()")
        alias = self.sql(expression, "alias")
        sql = " ".join(parts)
        return f"{sql}{sep}{alias}" if alias else sql

    def join_sql(self, expression: exp.Join, join_op: str | None = None) -> str:
        within = expression.args.get("within")
        grace = expression.args.get("grace")
        plain = not (expression.method or expression.side or expression.kind)
        conditionless = not (expression.args.get("on") or expression.args.get("using"))
        if within is None and grace is None and not (plain and conditionless):
            return super().join_sql(expression, join_op)

        op = " ".join(
            part for part in (expression.method, expression.side, expression.kind) if part
        )
        sql = f"{self.seg(f'{op} JOIN' if op else 'JOIN')} {self.sql(expression, 'this')}"
        if within is not None:
            sql = f"{sql} {self.sql(within)}"
        if grace is not None:
            sql = f"{sql} GRACE PERIOD {self.sql(grace)}"
        on = expression.args.get("on")
        using = expression.args.get("using")
        if on is not None:
            sql = f"{sql} ON {self.sql(on)}"
        elif using:
            columns = ", ".join(self.sql(column) for column in using)
            sql = f"{sql} USING ({columns})"
        return sql

    # -- statements

    def watermark_sql(self, expression: expressions.Watermark) -> str:
        return (
            f"WATERMARK FOR {self.sql(expression, 'this')} AS "
            f"{self.sql(expression, 'expression')}"
        )

    def createsource_sql(self, expression: expressions.CreateSource) -> str:
        columns = [self.sql(column) for column in expression.expressions]
        watermark = expression.args.get("watermark")
        if watermark is not None:
            columns.append(self.sql(watermark))
        primary_key = expression.args.get("primary_key")
        if primary_key is not None:
            columns.append("PRIMARY KEY (" + ", ".join(
                self.sql(k) for k in primary_key.expressions) + ")")
        sql = (
            f"CREATE {expression.args['kind']} {self.sql(expression, 'this')} "
            f"({', '.join(columns)})"
        )
        options = expression.args.get("options")
        if options:
            listed = ", ".join(
                f"{self._option_name(option.name)}={self.sql(option, 'value')}"
                for option in options
            )
            sql = f"{sql} WITH ({listed})"
        row_format = expression.args.get("row_format")
        if row_format is not None:
            sql = f"{sql} FORMAT {row_format.name} ENCODE {expression.args['row_encode'].name}"
        return sql

    def _option_name(self, name: str) -> str:
        return name if is_bare_name(name, ".-") else self.sql(exp.Literal.string(name))

    def createas_sql(self, expression: expressions.CreateAs) -> str:
        emit = " EMIT CHANGES" if expression.args.get("emit_changes") else ""
        return (
            f"CREATE {expression.args['kind']} {self.sql(expression, 'this')} AS "
            f"{self.sql(expression, 'expression')}{emit}"
        )

    def insertinto_sql(self, expression: expressions.InsertInto) -> str:
        name = self.sql(expression, "this")
        return f"INSERT INTO {name} {self.sql(expression, 'expression')}"

    def withstep_sql(self, expression: expressions.WithStep) -> str:
        return f"WITH {self.sql(expression, 'this')} AS ({self.sql(expression, 'expression')})"

    def setoption_sql(self, expression: expressions.SetOption) -> str:
        value = self.sql(expression, "expression")
        return f"SET {self._option_name(expression.name)} = {value}"

    def explain_sql(self, expression: expressions.Explain) -> str:
        return f"EXPLAIN {self.sql(expression, 'this')}"

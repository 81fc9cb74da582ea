"""FROM: tables and joins.

A table may carry an s-Server ``OVER (...)`` window (between its name and its
alias, or after the alias) and RisingWave's ``FOR SYSTEM_TIME AS OF
PROCTIME()``; a join may carry ``WITHIN ...`` and ``GRACE PERIOD ...`` before
or after its ON. These become extra arguments of the standard sqlglot nodes
(``stream_window``, ``proctime``, ``within``, ``grace``; ``comma`` on the
join of ``FROM a, b``).
"""

from __future__ import annotations

import typing as t

from splice.sql import expressions
from splice.sql.parsing.windows import WindowParser
from sqlglot import exp
from sqlglot.tokens import TokenType

# Where a parsed pre-ON window waits (on the join's table) for its exp.Join.
_JOIN_WINDOW_META = "splice_join_window"


class _JoinWindow(t.NamedTuple):
    """A join's window clauses: ``WITHIN ...`` and ``GRACE PERIOD ...``."""

    within: expressions.Within | None
    grace: expressions.Duration | None


class JoinParser(WindowParser):
    """Tables with their Splice clauses, and joins with their windows."""

    # Lenses' `FROM a JOIN b` has no condition; it is not `ON TRUE`.
    ADD_JOIN_ON_TRUE = False

    def __init__(self, *args: t.Any, **kwargs: t.Any) -> None:
        super().__init__(*args, **kwargs)
        # Set while exp.Join parsing is about to read the join's table.
        self._join_table_pending = False

    def reset(self) -> None:
        super().reset()
        self._join_table_pending = False

    def _parse_table(
        self,
        schema: bool = False,
        joins: bool = False,
        alias_tokens: t.Collection[TokenType] | None = None,
        parse_bracket: bool = False,
        is_db_reference: bool = False,
        parse_partition: bool = False,
        consume_pipe: bool = False,
    ) -> exp.Expr | None:
        join_table, self._join_table_pending = self._join_table_pending, False
        plain = not schema and not is_db_reference

        if plain and self._at_window_function():
            node: exp.Expr | None = self._parse_window_table()
        else:
            node = super()._parse_table(
                schema=schema,
                joins=joins,
                alias_tokens=alias_tokens,
                parse_bracket=parse_bracket,
                is_db_reference=is_db_reference,
                parse_partition=parse_partition,
                consume_pipe=consume_pipe,
            )

        if plain and isinstance(node, exp.Table):
            self._finish_table(node)
        if join_table and node is not None:
            window = self._parse_join_window()
            if window.within or window.grace:
                node.meta[_JOIN_WINDOW_META] = window
        return node

    def _parse_table_parts(
        self,
        schema: bool = False,
        is_db_reference: bool = False,
        wildcard: bool = False,
        fast: bool = False,
    ) -> exp.Table | exp.Dot | None:
        table = super()._parse_table_parts(
            schema=schema, is_db_reference=is_db_reference, wildcard=wildcard, fast=fast
        )
        if not fast and not schema and not is_db_reference and isinstance(table, exp.Table):
            # s-Server writes the window between the name and the alias.
            window = self._parse_stream_window()
            if window is not None:
                table.set("stream_window", window)
        return table

    def _finish_table(self, table: exp.Table) -> None:
        """Splice's table clauses that may follow the alias:
        ``FOR SYSTEM_TIME AS OF PROCTIME()`` (parsed by sqlglot as a
        Version) and an ``OVER (...)`` window."""
        version = table.args.get("version") or self._parse_version()
        if version is not None:
            table.set("version", None)
            table.set("proctime", True)
        if not table.args.get("stream_window"):
            window = self._parse_stream_window()
            if window is not None:
                table.set("stream_window", window)

    def _parse_version(self) -> exp.Version | None:
        """sqlglot's time-travel clause; Splice accepts only RisingWave's
        ``FOR SYSTEM_TIME AS OF PROCTIME()``."""
        clause = self._curr
        version = super()._parse_version()
        if version is not None and not _is_proctime(version):
            self._fail("only FOR SYSTEM_TIME AS OF PROCTIME() is supported on a table",
                       "write FOR SYSTEM_TIME AS OF PROCTIME() for a stream-table join, "
                       "or remove the clause", clause)
        return version

    def _parse_join(
        self,
        skip_join_token: bool = False,
        parse_bracket: bool = False,
        alias_tokens: t.Collection[TokenType] | None = None,
    ) -> exp.Join | None:
        start = self._index
        self._join_table_pending = True
        try:
            join = super()._parse_join(
                skip_join_token=skip_join_token,
                parse_bracket=parse_bracket,
                alias_tokens=alias_tokens,
            )
        finally:
            self._join_table_pending = False
        if isinstance(join, exp.Join):
            self._finish_join(join, start)
        return join

    def _finish_join(self, join: exp.Join, start: int) -> None:
        """Attach the join's windows (before or after ON), its offset, and
        normalise what the dialects spell differently."""
        first = self._tokens[start]
        comma = first.token_type == TokenType.COMMA
        if comma and start + 1 < self._tokens_size:
            first = self._tokens[start + 1]
        join.meta["offset"] = first.start

        this = join.this
        before = this.meta.pop(_JOIN_WINDOW_META, None) if this is not None else None
        after = self._parse_join_window()
        if before and after.within and before.within:
            self._fail("a join has one WITHIN window, given here a second time",
                       "keep one WITHIN, before or after ON")
        if before and after.grace and before.grace:
            self._fail("a join has one GRACE PERIOD, given here a second time",
                       "keep one GRACE PERIOD")
        within = (before.within if before else None) or after.within
        grace = (before.grace if before else None) or after.grace
        if within is not None:
            join.set("within", within)
        if grace is not None:
            join.set("grace", grace)

        # LEFT OUTER = LEFT; Lenses' bare OUTER JOIN = FULL; a comma = CROSS,
        # marked ``comma``: its WHERE is its condition (sql/where_parts.py).
        if join.kind == "OUTER":
            join.set("kind", None)
            if not join.side:
                join.set("side", "FULL")
        if comma:
            join.set("kind", "CROSS")
            join.set("comma", True)
        on = join.args.get("on")
        if isinstance(on, exp.Paren):
            join.set("on", on.this)

    def _parse_join_window(self) -> _JoinWindow:
        within: expressions.Within | None = None
        grace: expressions.Duration | None = None
        if self._match_text_seq("WITHIN"):
            if self._match(TokenType.L_PAREN):
                before = self._parse_required_duration("WITHIN (")
                if not self._match(TokenType.COMMA):
                    self._fail("syntax error: expected ',' between the two durations of "
                               "WITHIN (before, after)", "write WITHIN (1 MINUTE, 2 MINUTES)")
                after = self._parse_required_duration("WITHIN (before,")
                if not self._match(TokenType.R_PAREN):
                    self._fail("syntax error: expected ')' to close WITHIN (before, after)",
                               "write WITHIN (1 MINUTE, 2 MINUTES)")
                within = self.expression(expressions.Within(this=before, expression=after))
            else:
                within = self.expression(
                    expressions.Within(this=self._parse_required_duration("WITHIN"))
                )
        if self._match_text_seq("GRACE"):
            if not self._match_text_seq("PERIOD"):
                self._fail("syntax error: expected PERIOD after GRACE",
                           "write GRACE PERIOD 5 SECONDS")
            grace = self._parse_required_duration("GRACE PERIOD")
        return _JoinWindow(within, grace)


def _is_proctime(version: exp.Expr) -> bool:
    """Whether a sqlglot Version node is ``FOR SYSTEM_TIME AS OF PROCTIME()``."""
    call = version.args.get("expression")
    return (
        str(version.this).upper() == "TIMESTAMP"
        and version.args.get("kind") == "AS OF"
        and isinstance(call, exp.Func)
        and call.name.upper() == "PROCTIME"
        and not call.expressions
    )

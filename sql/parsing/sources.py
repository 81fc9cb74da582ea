"""``CREATE STREAM|TABLE|SOURCE name (columns [, WATERMARK FOR ...]) WITH (...)``:
the column list, the watermark and the options of a declared source."""

from __future__ import annotations

from splice.sql import expressions
from splice.sql.parsing.lexical import LexicalParser, is_text, is_word_token
from sqlglot import exp
from sqlglot.parser import SENTINEL_NONE
from sqlglot.tokens import TokenType


class SourceParser(LexicalParser):
    """The body of a source declaration, after its name."""

    def _parse_create_source(self, kind: str, name: exp.Identifier) -> expressions.CreateSource:
        context = f"CREATE {kind} {name.name}"
        columns: list[exp.Expr] = []
        watermark: expressions.Watermark | None = None
        primary_key: exp.PrimaryKey | None = None
        while True:
            if self._match(TokenType.PRIMARY_KEY):  # RisingWave: PRIMARY KEY (a, b)
                if primary_key is not None:
                    self._fail(f"{context} declares more than one PRIMARY KEY",
                               "keep one PRIMARY KEY (column, ...)", self._prev)
                primary_key = self._parse_primary_key_list(context)
            elif self._match_text_seq("WATERMARK", "FOR"):
                if watermark is not None:
                    self._fail(f"{context} declares more than one WATERMARK",
                               "keep one WATERMARK FOR <column> AS <expression>",
                               self._tokens[self._index - 2])
                watermark = self._parse_watermark(context)
            else:
                columns.append(self._parse_source_column(context))

            if self._match(TokenType.COMMA):
                continue
            if self._match(TokenType.R_PAREN):
                break
            self._fail(f"syntax error: expected ',' or ')' after a column in the column "
                       f"list of {context}",
                       "separate the columns with ',' and close the list with ')'")

        if not columns and primary_key is None:  # RisingWave: (PRIMARY KEY (id)) alone
            self._fail(f"{context} declares no columns", "declare at least one column")

        options = self._parse_source_options(context) if self._match(TokenType.WITH) else None
        if is_text(self._curr, "FORMAT") and self._next.token_type == TokenType.L_PAREN:
            # Lenses: CREATE TABLE name (...) FORMAT (key, value) [PROPERTIES (...)]
            self._advance(2)
            topic_format = self._parse_topic_format(context)
            properties = None
            if is_text(self._curr, "PROPERTIES"):
                self._advance()
                properties = self._parse_source_options(context, "PROPERTIES")
            return self.expression(
                expressions.CreateSource(this=name, kind=kind, expressions=columns,
                                   watermark=watermark, options=options,
                                   primary_key=primary_key, topic_format=topic_format,
                                   properties=properties))
        row_format, row_encode, encode_options = self._parse_row_format(context)
        return self.expression(
            expressions.CreateSource(this=name, kind=kind, expressions=columns,
                               watermark=watermark, options=options, primary_key=primary_key,
                               row_format=row_format, row_encode=row_encode,
                               encode_options=encode_options)
        )

    def _parse_topic_format(self, context: str) -> exp.Tuple:
        """Lenses' ``FORMAT (key format, value format)``, after its '(': the
        two words as written (the analyzer checks them)."""
        words: list[exp.Var] = []
        for closing in (TokenType.COMMA, TokenType.R_PAREN):
            token = self._curr
            if token is None or not token.text.isidentifier():
                self._fail(f"syntax error: expected a storage format in the FORMAT (...) of "
                           f"{context}", "write FORMAT (STRING, JSON): the key's format, "
                           "then the value's")
            self._advance()
            words.append(self.expression(exp.Var(this=token.text.upper()), token))
            if not self._match(closing):
                self._fail(f"syntax error: expected '{',' if closing == TokenType.COMMA else ')'}"
                           f"' in the FORMAT (...) of {context}",
                           "write FORMAT (STRING, JSON): the key's format, then the value's")
        return self.expression(exp.Tuple(expressions=words))

    def _parse_primary_key_list(self, context: str) -> exp.PrimaryKey:
        if not self._match(TokenType.L_PAREN):
            self._fail(f"syntax error: expected '(' after PRIMARY KEY in {context}",
                       "write PRIMARY KEY (column, ...)")
        keys: list[exp.Expr] = []
        while True:
            key = self._parse_id_var(any_token=False)
            if not isinstance(key, exp.Identifier):
                self._fail(f"syntax error: expected a column name in the PRIMARY KEY of "
                           f"{context}", "write PRIMARY KEY (column, ...)")
            keys.append(key)
            if self._match(TokenType.COMMA):
                continue
            if self._match(TokenType.R_PAREN):
                return self.expression(exp.PrimaryKey(expressions=keys))
            self._fail(f"syntax error: expected ',' or ')' in the PRIMARY KEY of {context}",
                       "write PRIMARY KEY (column, ...)")

    def _parse_row_format(self, context: str) -> tuple[exp.Var | None, exp.Var | None,
                                                        list[exp.Property] | None]:
        """RisingWave's ``FORMAT PLAIN|UPSERT ENCODE JSON|AVRO [(options)]``
        after the WITH (...); the words as written and the encoding's
        options (the analyzer checks them)."""
        if not is_text(self._curr, "FORMAT"):
            return None, None, None
        self._advance()
        words: list[exp.Var] = []
        for clause in ("FORMAT", "ENCODE"):
            if clause == "ENCODE" and not self._match_text_seq("ENCODE"):
                self._fail(f"syntax error: expected ENCODE after FORMAT {words[0].name} in "
                           f"{context}", f"write FORMAT {words[0].name} ENCODE JSON")
            token = self._curr
            if token is None or not token.text.isidentifier():
                self._fail(f"syntax error: expected a word after {clause} in {context}",
                           "write FORMAT PLAIN ENCODE JSON (or FORMAT UPSERT ENCODE JSON)")
            self._advance()
            words.append(self.expression(exp.Var(this=token.text.upper()), token))
        encode_options = None
        if self._curr is not None and self._curr.token_type == TokenType.L_PAREN:
            encode_options = self._parse_source_options(context, f"ENCODE {words[1].name}")
        return words[0], words[1], encode_options

    def _parse_source_column(self, context: str) -> exp.Expr:
        first = self._curr
        if is_text(first, "_KEY") and self._next.token_type == TokenType.DOT:
            return self._parse_key_field(context)
        named = is_word_token(first) or first.token_type == TokenType.IDENTIFIER
        column = self._parse_field_def() if named else None
        if isinstance(column, exp.Identifier) or (
            isinstance(column, exp.ColumnDef) and not column.args.get("kind")
        ):
            self._fail(f"syntax error: column {column.name} of {context} has no type",
                       f"give it a type: {column.name} STRING, {column.name} INT, ...",
                       self._curr or SENTINEL_NONE)
        if not isinstance(column, exp.ColumnDef) or not isinstance(column.this,
                                                                   exp.Identifier):
            self._fail(f"syntax error: expected a column name and type in the column list of "
                       f"{context}", "declare each column as <name> <type>, e.g. id INT",
                       first or SENTINEL_NONE)
        if is_text(self._curr, "KEY"):  # ksqlDB: id INT KEY (a key column of a stream)
            self._advance()
            constraints = [*(column.args.get("constraints") or []), exp.ColumnConstraint(
                kind=exp.PrimaryKeyColumnConstraint())]
            column.set("constraints", constraints)
        return column

    def _parse_key_field(self, context: str) -> exp.ColumnDef:
        """Lenses' ``_key.name TYPE``: a field of the record's key (a JSON
        key object), named with its facet."""
        first = self._curr
        name = self._parse_dotted_word()
        kind = self._parse_types()
        if name is None or kind is None:
            self._fail(f"syntax error: expected a type after the key field "
                       f"{name.name if name else '_key'} of {context}",
                       "give it a type: _key.id INT", self._curr or first)
        column = exp.ColumnDef(this=exp.to_identifier(name.name), kind=kind)
        return self.expression(column, first)

    def _parse_watermark(self, context: str) -> expressions.Watermark:
        column = self._parse_id_var(any_token=False)
        if not isinstance(column, exp.Identifier):
            self._fail(f"syntax error: expected the time column after WATERMARK FOR in "
                       f"{context}", "write WATERMARK FOR ts AS ts - INTERVAL '5' SECOND")
        if not self._match(TokenType.ALIAS):
            self._fail(f"syntax error: expected AS after WATERMARK FOR {column.name}",
                       f"write WATERMARK FOR {column.name} AS {column.name} - "
                       "INTERVAL '5' SECOND")
        expression = self._parse_assignment()
        if expression is None:
            self._fail(f"syntax error: expected an expression after WATERMARK FOR "
                       f"{column.name} AS", f"write {column.name} - INTERVAL '5' SECOND")
        return self.expression(expressions.Watermark(this=column, expression=expression))

    def _parse_source_options(self, context: str, clause: str = "WITH") -> list[exp.Property]:
        if not self._match(TokenType.L_PAREN):
            self._fail(f"syntax error: expected '(' after {clause} in {context}",
                       "write WITH (location='...', key='...')" if clause == "WITH"
                       else f"write {clause} (partitions=1)")
        options: list[exp.Property] = []
        while True:
            name = self._parse_dotted_word() or self._parse_string_as_identifier()
            if name is None:
                self._fail(f"syntax error: expected an option name in the {clause} (...) of "
                           f"{context}",
                           "write options as name='value', e.g. location='orders'")
            if not self._match(TokenType.EQ):
                self._fail(f"syntax error: expected '=' after the option {name.name} of "
                           f"{context}", f"write {name.name}='value'")
            value = self._parse_plain_value()
            if value is None:
                self._fail(f"syntax error: expected a value for the option {name.name} of "
                           f"{context}", f"write {name.name}='value'")
            options.append(self.expression(exp.Property(this=exp.var(name.name), value=value)))

            if self._match(TokenType.COMMA):
                continue
            if self._match(TokenType.R_PAREN):
                return options
            self._fail(f"syntax error: expected ',' or ')' after an option in the {clause} "
                       f"(...) of {context}",
                       "separate options with ',' and close the list with ')'")

"""Parse a pipeline file into its statements, with positions.

The whole file is tokenized once, so every token, node and error offset is
absolute in the file; the tokens are then cut at each ``;`` and every
statement is parsed on its own, so that one bad statement does not hide the
errors of the others. Whatever the input, only :class:`splice.sql.errors.SqlErrors`
leaves :func:`parse_script`; :func:`parse_partial` returns the statements
that parsed beside the errors of those that did not, so the analysis can go
on and report their errors too (``splice validate`` prints every error).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from splice.sql import expressions
from splice.sql.depth import MAX_NESTING, deepest_expression, ensure_stack, too_deep
from splice.sql.dialect import Splice
from splice.sql.errors import Position, SqlError, SqlErrors, position_in
from splice.sql.limits import FIX_TEXT, too_long, too_long_rule
from splice.sql.parsing.parser import SpliceParser
from splice.sql.parsing.statements import PIPELINE_STATEMENTS
from sqlglot import exp
from sqlglot.errors import ErrorLevel, ParseError, TokenError
from sqlglot.tokens import Token, TokenType

_DIALECT = Splice()


@dataclass(frozen=True)
class ParsedStatement:
    """One statement of a pipeline file."""

    node: exp.Expression  # one of sql.expressions.STATEMENT_TYPES
    position: Position  # of the statement's first token
    text: str  # the statement's own source text (without the ';')


@dataclass(frozen=True)
class ParsedScript:
    """What a pipeline file parsed to: the statements that parsed, one
    error per statement that did not, and what those would have declared,
    so that the analysis of the others does not report a reader of such a
    name again (the name's error is already reported)."""

    statements: list[ParsedStatement]
    errors: list[SqlError]
    unparsed_names: frozenset[str]  # lower case
    unnamed: bool  # a statement that did not parse declares a name its tokens do not show


def parse_script(text: str, file: str) -> list[ParsedStatement]:
    """The statements of ``text`` (the contents of ``file``), in order.

    Every statement node and every ``exp.Join`` in them carries
    ``meta["offset"]``. Raises :class:`SqlErrors` with one positioned error per
    statement that does not parse or is not a pipeline statement.
    """
    script = parse_partial(text, file)
    if script.errors:
        raise SqlErrors(script.errors)
    return script.statements


def parse_partial(text: str, file: str) -> ParsedScript:
    """The statements of ``text`` that parse, and an error for each that
    does not (as :func:`parse_script` raises them). A file that does not
    tokenize has no statements: its one error stops the whole file, whose
    names are then all unknown (``unnamed``)."""
    source = _Source(text, file)
    ensure_stack()
    try:
        tokens = _tokenize(source)
    except _Rejected as rejected:
        return ParsedScript([], [rejected.error], frozenset(), unnamed=True)

    statements: list[ParsedStatement] = []
    errors: list[SqlError] = []
    names: set[str] = set()
    unnamed = False
    for chunk in _split_statements(tokens):
        try:
            statements.append(_parse_statement(source, chunk))
        except _Rejected as rejected:
            errors.append(rejected.error)
            declares, name = _declared_by(chunk)
            if name is not None:
                names.add(name.lower())
            unnamed = unnamed or (declares and name is None)
    return ParsedScript(statements, errors, frozenset(names), unnamed)


# The words that may come before the name a statement declares:
# [EXPLAIN] CREATE [OR REPLACE] [MATERIALIZED] STREAM|TABLE|SOURCE|SINK|VIEW
# [IF NOT EXISTS] name, INSERT INTO name, WITH name.
_BEFORE_NAME = frozenset({"EXPLAIN", "CREATE", "OR", "REPLACE", "MATERIALIZED", "STREAM",
                          "TABLE", "SOURCE", "SINK", "VIEW", "IF", "NOT", "EXISTS", "INSERT",
                          "INTO", "WITH"})
_NAMES = frozenset({TokenType.VAR, TokenType.IDENTIFIER})


def _declared_by(chunk: list[Token]) -> tuple[bool, str | None]:
    """Whether the statement of ``chunk`` (one that did not parse) declares
    a name, and the name when its tokens show it: the first name after the
    statement's leading keywords. One that starts with another keyword (SET,
    SELECT, DROP ...) declares none; one that starts with a plain word (a
    misspelt CREATE) may declare any."""
    first = chunk[0]
    if first.text.upper() not in _BEFORE_NAME:
        return first.token_type == TokenType.VAR, None
    for token in chunk:
        quoted = token.token_type == TokenType.IDENTIFIER
        if not quoted and token.text.upper() in _BEFORE_NAME:
            continue
        return True, token.text if token.token_type in _NAMES else None
    return True, None


def node_position(
    node: exp.Expression, text: str, file: str, fallback: Position
) -> Position:
    """Where ``node`` stands in ``text``: its own ``meta["offset"]``, else the
    earliest position sqlglot recorded on a descendant (an identifier, a
    column, a literal ...), else ``fallback``."""
    offset = node.meta_get("offset")
    if offset is None:
        offset = _earliest_offset(node)
    return fallback if offset is None else position_in(text, offset, file)


# ----------------------------------------------------------------------
# Tokens and statements


@dataclass(frozen=True)
class _Source:
    text: str
    file: str

    def at(self, offset: int) -> Position:
        return position_in(self.text, offset, self.file)


class _Rejected(Exception):
    """Internal: carries one SqlError out of the parsing helpers."""

    def __init__(self, error: SqlError) -> None:
        super().__init__(error.render())
        self.error = error


def _tokenize(source: _Source) -> list[Token]:
    tokenizer = _DIALECT.tokenizer_class(dialect=_DIALECT)
    try:
        return tokenizer.tokenize(source.text)
    except TokenError:
        offset = _failed_token_offset(tokenizer.tokens, source.text)
        raise _Rejected(_token_error(source, offset)) from None
    except Exception:  # a tokenizer bug must not reach the user as a traceback
        raise _Rejected(
            SqlError(source.at(0), "the file could not be read as SQL",
                     "check the file's quotes and comments")
        ) from None


def _failed_token_offset(tokens: list[Token], text: str) -> int:
    """The offset of the token the tokenizer was reading when it failed.

    ``tokens`` are those it read before failing (sqlglot's public
    ``Tokenizer.tokens``); the failing token is the first thing after the
    last of them that is neither white space nor a whole comment."""
    offset = tokens[-1].end + 1 if tokens else 0
    while offset < len(text):
        if text[offset].isspace():
            offset += 1
            continue
        end = _comment_end(text, offset)
        if end is None:
            return offset
        offset = end
    return len(text)


def _comment_end(text: str, offset: int) -> int | None:
    """Where the comment that starts at ``offset`` ends; ``None`` when no
    comment starts there, or one starts and is never closed.

    Comments are those the dialect's tokenizer declares (``COMMENTS``, and
    Jinja's ``{# #}``, which sqlglot reads in every dialect). A block
    comment ends at the first of its closing marks that the tokenizer itself
    accepts as its end (nested comments included)."""
    tokenizer = Splice.Tokenizer
    for comment in [*tokenizer.COMMENTS, ("{#", "#}")]:
        start, close = (comment, None) if isinstance(comment, str) else comment
        if not text.startswith(start, offset):
            continue
        if close is None:  # a line comment
            stops = "\n" if tokenizer.COMMENTS_TERMINATE_AT_NEWLINE_ONLY else "\n\r"
            ends = [end for stop in stops if (end := text.find(stop, offset)) != -1]
            return min(ends, default=len(text))
        found = text.find(close, offset + len(start))
        while found != -1:
            end = found + len(close)
            if _only_comments(text[offset:end]):
                return end
            found = text.find(close, found + 1)
        return None
    return None


def _only_comments(text: str) -> bool:
    """Whether ``text`` tokenizes to nothing: white space and whole comments."""
    try:
        return not _DIALECT.tokenize(text)
    except TokenError:
        return False


def _token_error(source: _Source, offset: int) -> SqlError:
    opening = source.text[offset : offset + 2]
    if opening.startswith("'"):
        rule, fix = "syntax error: this string is never closed", "end the string with '"
    elif opening[:1] in ('"', "`"):
        rule = "syntax error: this quoted name is never closed"
        fix = f"end the name with {opening[:1]}"
    elif opening == "/*":
        rule, fix = "syntax error: this comment is never closed", "end the comment with */"
    else:
        rule, fix = "syntax error: unreadable text", "remove or quote the characters here"
    return SqlError(source.at(offset), rule, fix)


def _split_statements(tokens: list[Token]) -> list[list[Token]]:
    """The tokens of each statement; stray ``;`` make no statement."""
    chunks: list[list[Token]] = [[]]
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            chunks.append([])
        else:
            chunks[-1].append(token)
    return [chunk for chunk in chunks if chunk]


def _parse_statement(source: _Source, chunk: list[Token]) -> ParsedStatement:
    first, last = chunk[0], chunk[-1]
    deep = too_deep(chunk)
    if deep is not None:
        raise _Rejected(nesting_error(source.at(deep[1].start), deep[0]))
    parser = _DIALECT.parser(error_level=ErrorLevel.IMMEDIATE)
    try:
        parsed = parser.parse(chunk, source.text)
    except ParseError as error:
        raise _Rejected(_syntax_error(source, error, first)) from None
    except RecursionError:  # the backstop of too_deep: never a traceback
        raise _Rejected(nesting_error(source.at(first.start), None)) from None
    except Exception:  # a parser bug must not reach the user as a traceback
        raise _Rejected(_internal_error(source, parser, first)) from None

    node = parsed[0] if len(parsed) == 1 else None
    if not isinstance(node, expressions.STATEMENT_TYPES):
        raise _Rejected(_not_a_statement(source, first))
    deep = deepest_expression(node)
    if deep is not None:
        raise _Rejected(nesting_error(
            node_position(deep[1], source.text, source.file, source.at(first.start)), deep[0]))

    node.meta["offset"] = first.start
    _position_joins(node)
    _check_intervals(source, node, chunk)
    return ParsedStatement(
        node=node, position=source.at(first.start), text=source.text[first.start : last.end + 1]
    )


def _position_joins(node: exp.Expr) -> None:
    """Give every join an offset (the parser sets it; this is the backstop)."""
    for join in node.find_all(exp.Join):
        if join.meta_get("offset") is None:
            offset = _earliest_offset(join)
            if offset is not None:
                join.meta["offset"] = offset


def _check_intervals(source: _Source, node: exp.Expr, chunk: list[Token]) -> None:
    """Refuse an INTERVAL in an expression (a time bound in ON, a
    watermark, a residual predicate ...) that is longer than Spark can hold
    (:mod:`splice.sql.limits`); the durations of Splice's clauses are checked as
    they are parsed."""
    from splice.sql.intervals import interval_ms  # it imports the analysis, which imports this

    first = chunk[0]

    for interval in node.find_all(exp.Interval):
        ms = interval_ms(interval)
        if ms is not None and too_long(ms):
            where = node_position(interval, source.text, source.file,
                                  _amount_position(source, chunk, interval, first))
            raise _Rejected(SqlError(where, too_long_rule(interval.sql(dialect="spark")),
                                     FIX_TEXT))


def _amount_position(source: _Source, chunk: list[Token], interval: exp.Interval,
                     first: Token) -> Position:
    """Where an INTERVAL whose nodes sqlglot did not position (``INTERVAL 5
    SECONDS``: the amount becomes a new string literal) is written: the
    first INTERVAL keyword followed by its amount."""
    amount = interval.this.name if isinstance(interval.this, exp.Expression) else None
    for keyword, token in itertools.pairwise(chunk):
        if keyword.token_type == TokenType.INTERVAL and token.text == amount:
            return source.at(token.start)
    return source.at(first.start)


def _earliest_offset(node: exp.Expr) -> int | None:
    offsets = [
        offset
        for descendant in node.walk()
        if (offset := descendant.meta_get("offset", descendant.meta_get("start"))) is not None
    ]
    return min(offsets, default=None)


# ----------------------------------------------------------------------
# Error wording


# First tokens that are not a statement's keyword.
_NOT_KEYWORDS = frozenset(
    {TokenType.VAR, TokenType.NUMBER, TokenType.STRING, TokenType.IDENTIFIER}
)


def _not_a_statement(source: _Source, first: Token) -> SqlError:
    keyword = first.token_type not in _NOT_KEYWORDS and first.text.replace(" ", "").isalpha()
    what = f"{first.text.upper()} statements cannot" if keyword else "this statement cannot"
    if first.token_type in (TokenType.SELECT, TokenType.WITH):
        fix = ("name its result: INSERT INTO <name> SELECT ..., CREATE STREAM <name> AS "
               "SELECT ... or WITH <name> AS (SELECT ...)")
    else:
        fix = "remove this statement from the pipeline"
    return SqlError(
        source.at(first.start),
        f"{what} be part of a pipeline, which holds only {PIPELINE_STATEMENTS}",
        fix,
    )


def nesting_error(position: Position, depth: int | None) -> SqlError:
    """The error of a statement whose expression nests deeper than Spark
    compiles (``depth`` levels where known; :mod:`splice.sql.depth`)."""
    how_deep = f"nested {depth} deep" if depth is not None else "nested too deep to compile"
    return SqlError(
        position,
        f"expression {how_deep}; at most {MAX_NESTING} levels of operators, function calls, "
        "parentheses and CASE are allowed (Spark's parser overflows its stack on deeper "
        "ones; AND and OR do not count)",
        "compute part of it in an earlier step (WITH name AS (SELECT ...)), or nest it less",
    )


def _internal_error(source: _Source, parser: SpliceParser, first: Token) -> SqlError:
    current = parser.current_offset()
    offset = first.start if current is None else current
    return SqlError(
        source.at(offset),
        "syntax error: this statement could not be parsed here",
        "check the statement's syntax near this point",
    )


# Hints for words that are valid Splice but not where they were found.
_MISPLACED: dict[str, tuple[str, str]] = {
    "WITHIN": ("WITHIN belongs to a JOIN", "write ... JOIN b WITHIN 5s ON ..."),
    "GRACE": ("GRACE PERIOD belongs to a JOIN",
              "write ... JOIN b WITHIN 5s GRACE PERIOD 1s ON ..."),
    "OVER": ("OVER (...) follows a stream name in FROM or JOIN",
             "write FROM s OVER (RANGE INTERVAL '1' MINUTE PRECEDING) AS a"),
    "EMIT": ("EMIT CHANGES ends a CREATE STREAM|TABLE ... AS SELECT statement",
             "put EMIT CHANGES last, or remove it"),
}


def _syntax_error(source: _Source, error: ParseError, first: Token) -> SqlError:
    info = error.errors[0] if error.errors else {}
    offset = info.get("offset")
    if not isinstance(offset, int):
        offset = first.start
    rule, fix = _wording(info)
    return SqlError(source.at(offset), rule, fix)


def _wording(info: dict) -> tuple[str, str]:
    """The rule and fix for a parse error: Splice's own words where the
    dialect raised it, otherwise sqlglot's description made plain."""
    description = str(info.get("description") or "syntax error").rstrip(".")
    token = str(info.get("token") or "")
    at_end = bool(info.get("at_end"))
    found = "the end of the statement" if at_end else f"{token!r}"

    if "fix" in info:
        return description, str(info["fix"])
    if description.startswith("Expecting "):
        expected = description.removeprefix("Expecting ").strip()
        return (f"syntax error: expected {expected!r} but found {found}",
                f"add the missing {expected!r}")
    if description.startswith("Invalid expression / Unexpected token"):
        if at_end:
            return ("syntax error: the statement ends too early",
                    "complete the statement before its ';'")
        hint = _MISPLACED.get(token.upper())
        if hint:
            return f"syntax error: unexpected {token!r}; {hint[0]}", hint[1]
        return (f"syntax error: unexpected {found}",
                "remove or correct it; each statement ends with ';'")
    if description.startswith("Required keyword"):
        return (f"syntax error: incomplete expression near {found}",
                "complete the expression or remove the stray word")
    if description.startswith("Failed to parse any statement following CTE"):
        return ("syntax error: WITH name AS (...) must be followed by a query here",
                "add the SELECT that uses the named query")
    if description.startswith("Expected table name"):
        return (f"syntax error: expected a stream or table name but found {found}",
                "name a stream or table, e.g. FROM orders")
    return f"syntax error: {description[:1].lower()}{description[1:]} (near {found})", (
        "correct the statement near this point"
    )

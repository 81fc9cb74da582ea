"""Where a file that cannot be tokenized is reported: at the unclosed string,
name or comment, found from sqlglot's public tokenizer API (the tokens read
before the failure), past any whole comments in between."""

from __future__ import annotations

import pytest
from splice.sql.errors import SqlErrors
from splice.sql.script import parse_script


def first_error(sql: str) -> tuple[int, int, str]:
    with pytest.raises(SqlErrors) as raised:
        parse_script(sql, "t.sql")
    [error] = raised.value.errors
    return error.position.line, error.position.col, error.rule


@pytest.mark.parametrize(
    ("sql", "line", "col", "words"),
    [
        ("SELECT a /* note */ 'abc", 1, 21, "string is never closed"),
        ("SELECT a -- note\n  'abc", 2, 3, "string is never closed"),
        ("SELECT a -- note\r'abc", 1, 18, "string is never closed"),
        ("SELECT a /* outer /* inner */ still */ 'abc", 1, 40, "string is never closed"),
        ("SELECT a {# jinja #} `b", 1, 22, "quoted name is never closed"),
        ("SELECT a /* one */ /* two", 1, 20, "comment is never closed"),
        ("SELECT a /* outer /* inner */ 'abc", 1, 10, "comment is never closed"),
        ("'abc", 1, 1, "string is never closed"),
        ("  \n /* c */ \"x", 2, 10, "quoted name is never closed"),
    ],
)
def test_unclosed_text_is_reported_where_it_opens(sql: str, line: int, col: int,
                                                  words: str) -> None:
    got_line, got_col, rule = first_error(sql)
    assert (got_line, got_col) == (line, col), rule
    assert words in rule

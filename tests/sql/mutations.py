"""Token mutations of the acceptance cases' SQL, for the fuzz tests."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import yaml
from splice.sql.dialect import Splice
from sqlglot.tokens import Token, TokenType

CASES = Path(__file__).resolve().parents[1] / "cases"


@dataclass(frozen=True)
class CaseSql:
    """One case's statements, each as the texts of its tokens."""

    name: str
    statements: tuple[tuple[str, ...], ...]


def token_text(token: Token) -> str:
    """A token written back so that it reads as the same token."""
    if token.token_type == TokenType.STRING:
        return "'" + token.text.replace("'", "''") + "'"
    if token.token_type == TokenType.IDENTIFIER:
        return '"' + token.text.replace('"', '""') + '"'
    return token.text


def case_sql() -> list[CaseSql]:
    """Every case file's SQL, cut into statements of tokens."""
    out: list[CaseSql] = []
    for path in sorted(CASES.glob("*.yaml")):
        tokens = Splice().tokenize(yaml.safe_load(path.read_text())["sql"])
        statements: list[tuple[str, ...]] = []
        current: list[str] = []
        for token in tokens:
            if token.token_type == TokenType.SEMICOLON:
                if current:
                    statements.append(tuple(current))
                current = []
            else:
                current.append(token_text(token))
        if current:
            statements.append(tuple(current))
        out.append(CaseSql(path.stem, tuple(statements)))
    return out


def mutate(tokens: list[str], rng: random.Random, vocabulary: list[str] | None = None,
           most: int = 3) -> list[str]:
    """One to ``most`` drops, duplications or swaps of tokens (neighbours, or
    any two), and replacements by a word of ``vocabulary`` when given. Most
    multiple mutations end in a syntax error; a single one often parses and
    so reaches the analyzer."""
    tokens = list(tokens)
    operations = ["drop", "duplicate", "swap", "swap-any"]
    if vocabulary:
        operations.append("replace")
    for _ in range(rng.randint(1, most)):
        at = rng.randrange(len(tokens))
        operation = rng.choice(operations)
        if operation == "drop" and len(tokens) > 1:
            del tokens[at]
        elif operation == "duplicate":
            tokens.insert(at, tokens[at])
        elif operation == "swap" and at + 1 < len(tokens):
            tokens[at], tokens[at + 1] = tokens[at + 1], tokens[at]
        elif operation == "swap-any":
            other = rng.randrange(len(tokens))
            tokens[at], tokens[other] = tokens[other], tokens[at]
        elif operation == "replace" and vocabulary:
            tokens[at] = rng.choice(vocabulary)
    return tokens


def vocabulary(cases: list[CaseSql]) -> list[str]:
    """Every distinct token text of the cases, in a fixed order."""
    return sorted({t for case in cases for s in case.statements for t in s})


def statement_text(tokens: tuple[str, ...] | list[str]) -> str:
    return " ".join(tokens)

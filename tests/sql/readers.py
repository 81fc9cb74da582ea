"""Later statements over earlier ones, for the fuzz tests: pipelines whose
statements read the names of statements before them, some of which fail.

A pipeline here is a case's first statements (one of them perhaps mutated),
then perhaps a declaration known to fail, then statements generated to read
the names declared so far (theirs included, so they chain): every kind of
query statement (CREATE ... AS with and without a Kafka sink, INSERT INTO,
WITH, a materialized view, EXPLAIN), over one input, a join of two or three
(ON, WITHIN, a comma join with its condition in WHERE, ASOF), a window
function or GROUP BY.
"""

from __future__ import annotations

import contextlib
import random
from dataclasses import dataclass

from splice.sql.analyzer import Analyzer
from splice.sql.errors import SqlErrors
from splice.sql.script import parse_script

from tests.sql.mutations import CaseSql, mutate, statement_text

# Declarations that fail, each on its own; ``{name}`` is the name declared.
# The first is issue 55's: a ksqlDB stream on a topic with no columns.
FAILING = (
    "CREATE STREAM {name} WITH (KAFKA_TOPIC='o', VALUE_FORMAT='JSON')",
    "CREATE TABLE {name} (id INT, v STRING) WITH (location='{name}', key='missing')",
    "CREATE STREAM {name} (id INT, ts TIMESTAMP) WITH (location='{name}', timestamp='nope')",
    "CREATE STREAM {name} (id INT) WITH (location='{name}', format='avro')",
    "CREATE STREAM {name} (id INT) WITH (location='../../{name}')",
    "CREATE STREAM {name} (id INT, id INT) WITH (location='{name}')",
    "CREATE TABLE {name} (id INT PRIMARY KEY) WITH (kafka_topic='t', value_format='AVRO')",
    "CREATE SOURCE {name} (id INT, ts TIMESTAMP, WATERMARK FOR other AS other - "
    "INTERVAL '1' SECOND) WITH (location='{name}')",
    "CREATE STREAM {name} (id INT) WITH (location='{name}'",
    "CREATE STREAM {name} AS SELECT nothing FROM nowhere",
    "WITH {name} AS (SELECT TABLE * FROM nowhere)",
    "CREATE STREAM {name} AS SELECT * FROM {other} a JOIN {other} b ON a._key = b._key",
    "CREATE STREAM {name} AS SELECT * FROM {other} a, {other} b WHERE a._key = b._key "
    "AND a.ROWTIME >= b.ROWTIME",
    "INSERT INTO {name} SELECT STREAM no_such_column FROM {other}",
)

# Statements that read names: ``{x}`` is the name declared, ``{n}``, ``{m}``
# and ``{k}`` names declared before.
READERS = (
    "CREATE STREAM {x} AS SELECT * FROM {n} EMIT CHANGES",
    "CREATE TABLE {x} AS SELECT * FROM {n}",
    "CREATE STREAM {x} WITH (KAFKA_TOPIC='{t}', VALUE_FORMAT='JSON') AS SELECT * FROM {n} "
    "EMIT CHANGES",
    "CREATE TABLE {x} WITH (kafka_topic='{t}', value_format='JSON', partitions=2) AS "
    "SELECT * FROM {n}",
    "CREATE STREAM {x} WITH (kafka_topic='{t}', value_format='AVRO') AS SELECT * FROM {n}",
    "CREATE STREAM {x} WITH (format='kafka', topic='{t}', nonsense='1') AS SELECT * FROM {n}",
    "CREATE MATERIALIZED VIEW {x} AS SELECT * FROM {n}",
    "INSERT INTO {x} SELECT STREAM * FROM {n}",
    "WITH {x} AS (SELECT TABLE * FROM {n})",
    "EXPLAIN CREATE STREAM {x} AS SELECT * FROM {n}",
    "CREATE TABLE {x} AS SELECT _key AS k, COUNT(*) AS c FROM {n} GROUP BY _key",
    "CREATE STREAM {x} AS SELECT * FROM TUMBLE({n}, ROWTIME, INTERVAL '1' MINUTE)",
    "INSERT INTO {x} SELECT * FROM {n} JOIN {m}",
    "INSERT INTO {x} SELECT * FROM {n} a JOIN {m} b ON a._key = b._key",
    "INSERT INTO {x} SELECT * FROM {n} a LEFT JOIN {m} b WITHIN 5 MINUTES ON a._key = b._key",
    "INSERT INTO {x} SELECT * FROM {n} a, {m} b WHERE a._key = b._key AND a.ROWTIME "
    "BETWEEN b.ROWTIME - INTERVAL '1' MINUTE AND b.ROWTIME",
    "INSERT INTO {x} SELECT * FROM {n} a, {m} b WHERE a._key = b._key AND a.ROWTIME "
    "<= b.ROWTIME",
    "INSERT INTO {x} SELECT * FROM {n} a JOIN {m} b ON a._key = b._key AND a.ROWTIME >= "
    "b.ROWTIME WHERE a.ROWTIME <= b.ROWTIME + INTERVAL '10' SECOND",
    "INSERT INTO {x} SELECT * FROM {n} a, {m} b, {k} c WHERE a._key = b._key AND "
    "b._key = c._key",
    "INSERT INTO {x} SELECT * FROM {n} a JOIN {m} b WITHIN 1 MINUTE ON a._key = b._key "
    "JOIN {k} c WITHIN 1 MINUTE ON a._key = c._key",
    "CREATE TABLE {x} AS SELECT * FROM {n} a ASOF JOIN {m} b ON a._key = b._key AND "
    "a.ROWTIME >= b.ROWTIME",
    "CREATE TABLE {x} AS SELECT a._key AS k, COUNT(*) AS c FROM {n} a JOIN {m} b "
    "WITHIN 1 MINUTE ON a._key = b._key GROUP BY a._key",
)


@dataclass(frozen=True)
class Built:
    """A generated pipeline: its statements, how many of them come before the
    readers (``prefix``), and the names of the failing declarations among
    them (no error may call those unknown)."""

    statements: tuple[str, ...]
    prefix: int
    failing: tuple[str, ...]

    def text(self, count: int | None = None) -> str:
        return ";\n".join(self.statements[:count]) + ";\n"


def quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def declared_names(case: CaseSql) -> list[list[str]]:
    """The names each unmutated statement of ``case`` declares."""
    analyzer = Analyzer("names")
    out = []
    for index, tokens in enumerate(case.statements):
        before = set(analyzer.names)
        text = statement_text(tokens) + ";"
        with contextlib.suppress(SqlErrors):
            analyzer.add(parse_script(text, f"{index}.sql"), text, f"{index}.sql")
        out.append(sorted(set(analyzer.names) - before))
    return out


def build(case: CaseSql, names: list[list[str]], rng: random.Random) -> Built:
    """One pipeline over ``case`` (module docstring)."""
    at = rng.randrange(len(case.statements))
    statements = [statement_text(s) for s in case.statements[:at + 1]]
    if rng.random() < 0.5:
        statements[at] = statement_text(mutate(list(case.statements[at]), rng, most=1))
    pool = [quoted(n) for found in names[:at + 1] for n in found]
    failing: list[str] = []
    if rng.random() < 0.7 or not pool:
        name = f"broken{rng.randrange(100)}"
        other = rng.choice(pool) if pool else quoted(name + "_missing")
        statements.append(rng.choice(FAILING).format(name=quoted(name), other=other))
        failing.append(name)
        pool.append(quoted(name))
    prefix = len(statements)
    for index in range(rng.randint(1, 4)):
        x = f"later{index}"
        n, m, k = (rng.choice(pool) for _ in range(3))
        statements.append(rng.choice(READERS).format(x=quoted(x), t=x, n=n, m=m, k=k))
        pool.append(quoted(x))
    return Built(tuple(statements), prefix, tuple(failing))

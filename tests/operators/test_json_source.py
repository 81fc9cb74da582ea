"""JSON-lines sources: bad records go to the dead-letter table with a reason,
and the run goes on."""

from __future__ import annotations

import base64
import glob
import os
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dagster import materialize
from pyspark.sql import functions as F
from splice.engine.io import appended_since, delta_version
from splice.engine.session import loads_splice_jar
from splice.operators.file_manifest import changed_files, last_read, manifest_path
from splice.operators.json_source import object_reason, verdict_in_expressions, verdict_in_jar
from splice.orchestration.assets import build_assets
from splice.resources.spark import SparkResource
from splice.runtime.runner import run_pipeline

from splice.cli.run import run_and_report
from tests.helpers.pipeline import append, make_io, output_rows

pytestmark = pytest.mark.spark

SQL = """
CREATE STREAM customers (id INT, name STRING) WITH (location='customers', key='id');
CREATE STREAM orders (id INT, customer_id INT, item STRING, ts TIMESTAMP)
  WITH (location='orders', format='json', key='id', timestamp='ts');
WITH customersTable AS (SELECT TABLE * FROM customers);
INSERT INTO result SELECT STREAM customersTable.name, orders.item, orders.ts
FROM orders LEFT JOIN customersTable ON customersTable.id = orders.customer_id;
"""


def test_bad_json_records_go_to_dead_letter_with_reason(spark, warehouse) -> None:
    io = make_io(spark, warehouse, SQL, name="json")
    append(io, "customers", [{"id": 1, "name": "John"}])
    append(io, "orders", [
        {"id": 1, "customer_id": 1, "item": "Computer", "ts": "2024-01-01 00:00:00"},
        {"id": 2, "customer_id": "three", "item": "Mouse", "ts": "2024-01-01 00:00:01"},
        {"id": 3, "customer_id": 1, "item": "Screen"},
    ])
    folder = warehouse.source_path("orders")
    with open(os.path.join(folder, "broken.json"), "w") as fh:
        fh.write('{"id": 4, "customer_id": 1, "item": \n')
    reports = {r.step_id: r for r in run_pipeline(io.pipeline, io)}

    assert output_rows(io, "result", "name", "item") == [("John", "Computer")]
    assert reports["orders"].dead_letters == 3
    dead = spark.read.format("delta").load(warehouse.dead_letter_path("json", "orders"))
    reasons = sorted((r["reason"], r["source"]) for r in dead.collect())
    assert reasons == [
        ("column 'customer_id': 'three' is not INT", "orders"),
        ("missing event time 'ts'", "orders"),
        ("not a JSON object", "orders"),
    ]
    records = " ".join(r["record"] for r in dead.collect())
    assert '"three"' in records and '"Screen"' in records

    # The run went on, and the next one picks up new good records only.
    append(io, "orders", [{"id": 5, "customer_id": 1, "item": "Mouse",
                           "ts": "2024-01-01 00:00:05"}])
    reports = {r.step_id: r for r in run_pipeline(io.pipeline, io)}
    assert reports["orders"].dead_letters == 0
    assert output_rows(io, "result", "name", "item") == [("John", "Computer"),
                                                          ("John", "Mouse")]


RAW_SQL = """
CREATE STREAM src (id INT, name STRING) WITH (location='src', format='json', key='id');
CREATE STREAM events (id INT, ts TIMESTAMP) WITH (location='events', key='id', timestamp='ts');
INSERT INTO latest SELECT TABLE * FROM src;
INSERT INTO seen SELECT STREAM * FROM events;
"""


def _write_bytes(folder: str, name: str, data: bytes) -> None:
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"_{name}.tmp"), "wb") as fh:
        fh.write(data)
    os.replace(os.path.join(folder, f"_{name}.tmp"), os.path.join(folder, name))


def _dead_rows(spark, warehouse, pipeline: str, source: str) -> list[tuple]:
    dead = spark.read.format("delta").load(warehouse.dead_letter_path(pipeline, source))
    return sorted((r["record"], r["record_encoding"], r["reason"]) for r in dead.collect())


def test_bad_bytes_trailing_text_and_incomplete_lines_are_dead_lettered(
        spark, warehouse) -> None:
    io = make_io(spark, warehouse, RAW_SQL, name="raw")
    folder = warehouse.source_path("src")
    _write_bytes(folder, "a.json", "\n".join([
        '{"id": 1, "name": "café"}',
        '{"id": 2, "name": "caf\udce9"}',
        '{"id": 6}}',
        '{"id": 7},0]',
        '[1]',
        '{"id": 8, "name": "z"}',
        '   ',
        '{"id": 9, "name": "cut"}',  # the last line, without its newline
    ]).encode("utf-8", "surrogateescape"))
    _write_bytes(folder, "b.json", b'\xff\xfe{"id": 10}\n{"id": 11, "name": "ok"}\r\n')
    reports = {r.step_id: r for r in run_pipeline(io.pipeline, io)}

    assert output_rows(io, "latest", "id", "name") == [(1, "café"), (11, "ok"), (8, "z")]
    assert reports["src"].rows_written == 3
    assert reports["src"].dead_letters == 6
    assert _dead_rows(spark, warehouse, "raw", "src") == sorted([
        (base64.b64encode(b'{"id": 2, "name": "caf\xe9"}').decode(), "base64",
         "not valid UTF-8"),
        (base64.b64encode(b'\xff\xfe{"id": 10}').decode(), "base64", "not valid UTF-8"),
        ('{"id": 6}}', "utf-8", "trailing characters after the JSON object"),
        ('{"id": 7},0]', "utf-8", "trailing characters after the JSON object"),
        ("[1]", "utf-8", "not a JSON object"),
        ('{"id": 9, "name": "cut"}', "utf-8", "incomplete line"),
    ])
    # Any Parquet reader reads the dead letters.
    dead_dir = warehouse.dead_letter_path("raw", "src").removeprefix("file:")
    files = sorted(glob.glob(os.path.join(dead_dir, "*.parquet")))
    table = pa.concat_tables([pq.read_table(f) for f in files])
    assert sorted(table.column("reason").to_pylist()).count("not valid UTF-8") == 2


def test_a_batch_without_rejected_records_makes_no_dead_letter_commit(spark, warehouse) -> None:
    io = make_io(spark, warehouse, RAW_SQL, name="clean")
    for run in range(2):
        append(io, "src", [{"id": run, "name": f"n{run}"}])
        append(io, "events", [{"id": run, "ts": f"2024-01-01 00:00:0{run}"}])
        run_pipeline(io.pipeline, io)
    for source in ("src", "events"):
        # version 0 is the empty table's creation: no commit since
        assert delta_version(spark, warehouse.dead_letter_path("clean", source)) == 0
    assert output_rows(io, "latest", "id", "name") == [(0, "n0"), (1, "n1")]
    assert output_rows(io, "seen", "id") == [(0,), (1,)]


def test_a_file_changed_after_ingest_is_reported(spark, warehouse, capsys) -> None:
    io = make_io(spark, warehouse, RAW_SQL, name="changed")
    folder = warehouse.source_path("src")
    _write_bytes(folder, "a.json", b'{"id": 1, "name": "x"}\n')
    _write_bytes(folder, "b.json", b'{"id": 2, "name": "y"}\n')
    reports = {r.step_id: r for r in run_pipeline(io.pipeline, io)}
    assert reports["src"].changed_files == []

    # A producer appends to a file that was already ingested.
    with open(os.path.join(folder, "a.json"), "ab") as fh:
        fh.write(b'{"id": 3, "name": "lost"}\n')
    reports = {r.step_id: r for r in run_pipeline(io.pipeline, io)}
    [changed] = reports["src"].changed_files
    assert (changed.name, changed.ingested_bytes, changed.bytes_now,
            changed.bytes_not_read) == ("a.json", 23, 49, 26)
    assert changed.describe() == ("a.json: changed after it was ingested (23 bytes read, "
                                  "49 bytes now); 26 bytes not read")
    assert output_rows(io, "latest", "id", "name") == [(1, "x"), (2, "y")]

    # ... and on every run after, in the CLI's summary and as a failed check.
    capsys.readouterr()
    run_and_report(io.pipeline, warehouse.root)
    out = capsys.readouterr().out
    assert "source 'src': a.json: changed after it was ingested (23 bytes read, 49 bytes " \
           "now); 26 bytes not read" in out
    result = materialize(build_assets(io.pipeline),
                         resources={"spark": SparkResource(), "warehouse": warehouse})
    [check] = [c for c in result.get_asset_check_evaluations()
               if c.check_name == "files_unchanged_after_ingest"]
    assert check.passed is False
    assert check.metadata["a.json"].value == 26


def test_the_manifest_is_read_from_the_files_appended_since_the_last_run(
        spark, warehouse) -> None:
    """A run reads only the manifest files committed since the last run read
    it (operators/file_manifest.py); with that copy gone, or after a commit
    that rewrote files, it reads the whole manifest: the answer is the same."""
    io = make_io(spark, warehouse, RAW_SQL, name="seen")
    folder = warehouse.source_path("src")
    checkpoint = io.checkpoint(io.pipeline.step("src"))
    for n, name in enumerate(["a.json", "b.json", "c.json"]):
        _write_bytes(folder, name, f'{{"id": {n}, "name": "v{n}"}}\n'.encode())
        reports = {r.step_id: r for r in run_pipeline(io.pipeline, io)}
        assert reports["src"].changed_files == []
    manifest = manifest_path(checkpoint)
    seen_version, seen = last_read(spark, checkpoint)
    assert seen_version == delta_version(spark, manifest)
    assert sorted(seen) == ["a.json", "b.json", "c.json"]
    # The last run read one file of the manifest: the one its commit added.
    [added] = appended_since(spark, manifest, seen_version - 1, seen_version)
    assert added.startswith(manifest) and added.endswith(".parquet") and os.path.exists(added)

    with open(os.path.join(folder, "b.json"), "ab") as fh:  # b came in by the partial read
        fh.write(b'{"id": 9, "name": "late"}\n')
    expected = [("b.json", 24, 50)]
    assert [(c.name, c.ingested_bytes, c.bytes_now)
            for c in changed_files(spark, folder, checkpoint)] == expected
    os.remove(os.path.join(checkpoint, "splice_files_read.json"))  # the whole read
    assert [(c.name, c.ingested_bytes, c.bytes_now)
            for c in changed_files(spark, folder, checkpoint)] == expected
    spark.sql(f"OPTIMIZE delta.`{manifest}`")  # a commit that rewrote files
    assert appended_since(spark, manifest, seen_version, seen_version + 1) is None
    assert [(c.name, c.ingested_bytes, c.bytes_now)
            for c in changed_files(spark, folder, checkpoint)] == expected
    assert last_read(spark, checkpoint)[0] == seen_version + 1


# (line, verdict: whole, trailing (an object, then more) or not-object)
VERDICTS = [
    ('{"a": 1}', "whole"),
    (' {"a": "]"} \t\r', "whole"),
    ('{"a": ",0,0]"}', "whole"),
    ('{"a": {"b": [1, {"c": null}]}}', "whole"),
    ('{"a": 1}}', "trailing"),
    ('{"a": 1}]x', "trailing"),  # closes the counting array early
    ('{"a": 1},0]', "trailing"),
    ('{"a": 1},0,0]', "trailing"),
    ('{"a": 1} {"b": 2}', "trailing"),
    ('{"a": 1}//c', "trailing"),
    ('{"a": 1} /*c*/', "trailing"),
    ("{\"a\": 1}, 'b'", "trailing"),
    ('{"a": 1},', "trailing"),
    ('{"a": 1}\u00a0', "trailing"),  # not JSON whitespace
    ('{"a": 1}\x00', "trailing"),
    # not strict JSON: duplicate keys at any depth, single quotes, NaN,
    # leading zeros, a control character in a string, a byte-order mark
    ('{"a": 1,"a": 2}', "not-object"),
    ('{"a": [{"b": 1, "b": 2}]}', "not-object"),
    ("{'a': 1}", "not-object"),
    ('{"a": NaN}', "not-object"),
    ('{"a": 01}', "not-object"),
    ('{"a": "\x01"}', "not-object"),
    ('\ufeff{"a": 1}', "not-object"),
    ('[{"a": 1}]', "not-object"),
    ('{"a": 1', "not-object"),
    ("", "not-object"),
    # what the jar's walk hands to the variant builder: a lone surrogate in
    # a string or a key, a duplicate key only an escape tells, numbers too
    # long to walk, a text too long to walk
    ('{"a": "\\ud800"}', "not-object"),
    ('{"\\udc00": 1}', "not-object"),
    ('{"a": "\\ud83d\\ude00x\\ud83d"}', "not-object"),
    ('{"a": "\\ud83d\\ude00"}', "whole"),
    ('{"a": 1, "\\u0061": 2}', "not-object"),
    ('{"a": 1234567890123456789012345678901234567890, "b": -9223372036854775808}', "whole"),
    ('{"a": 0.' + "1" * 80 + 'e-5, "b": 1' + "0" * 990 + '}', "whole"),
    ('{"a": 1' + "0" * 1200 + '}', "not-object"),
    ('{"a": "' + "x" * (1 << 20) + '"}', "whole"),
    ('{"a": "' + "x" * (1 << 20) + '"} x', "trailing"),
    ('{"a": ' + "[" * 900 + "]" * 900 + '}', "whole"),
    ('{"a": ' + "[" * 1200 + "]" * 1200 + '}', "not-object"),
]


def verdicts(spark, lines: list[str], in_jar: bool) -> list[str]:
    """Each line's verdict by Splice's jar or by Spark's expressions."""
    frame = spark.createDataFrame([(line,) for line in lines], "value string")
    verdict = (verdict_in_jar(F.col("value"), spark) if in_jar
               else verdict_in_expressions(F.col("value")))
    return [r["v"] for r in frame.select(verdict.alias("v")).collect()]


@pytest.mark.parametrize("in_jar", [True, False], ids=["jar", "expressions"])
def test_the_verdict_tells_a_whole_object_from_text_after_it(spark, in_jar: bool) -> None:
    """The verdicts the dead letter's reasons come from, on the lines that
    could fool counting the elements of ``[line]`` and ``[line,0,0]``, by
    either way of telling them (a local session uses the jar)."""
    assert loads_splice_jar(spark), "scripts/setup.sh builds the jar (python -m splice.local_fs)"
    lines = [line for line, _ in VERDICTS]
    assert list(zip(lines, verdicts(spark, lines, in_jar), strict=True)) == VERDICTS


def mutated_lines(count: int) -> list[str]:
    """``count`` lines mutated at random (seeded) from valid records:
    characters that matter to JSON put in, taken out or replaced, text
    added before or after."""
    rng = random.Random(15)
    seeds = ['{"id": 1, "item": "pen", "ts": "2024-01-01T00:00:00Z"}',
             '{"a": {"b": [1, 2.5e3, {"c": null, "d": "x\\"y"}]}, "e": true, "f": -0.0}',
             '{"k": "\\u00e9", "n": 12345678901234567890123, "z": {}}']
    alphabet = [*'{}[]",:\'\\ \t\n0123456789.eE+-aNtrufl/*#', "\u00a0", "\x00", "\ufeff"]
    lines = []
    for _ in range(count):
        line = list(rng.choice(seeds))
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(line) + 1)
            change = rng.random()
            if change < 0.4:
                line.insert(at, rng.choice(alphabet))
            elif change < 0.7 and line:
                del line[min(at, len(line) - 1)]
            elif line:
                line[min(at, len(line) - 1)] = rng.choice(alphabet)
        if rng.random() < 0.3:
            line += list(rng.choice([" ", "x", "]", ",0,0]", "}", "{}", "\t", "/*c*/", ",0]x"]))
        lines.append("".join(line))
    return lines


def test_the_jar_and_the_expressions_agree_on_every_line(spark) -> None:
    """The same verdicts from both ways on 6,000 mutated lines."""
    lines = mutated_lines(6000)
    jar, expressions = verdicts(spark, lines, True), verdicts(spark, lines, False)
    assert [(line, a, b) for line, a, b in zip(lines, jar, expressions, strict=True)
            if a != b] == []
    assert {v: jar.count(v) > 300 for v in ("whole", "trailing", "not-object")} == {
        "whole": True, "trailing": True, "not-object": True}


def test_the_jars_walk_answers_only_as_the_variant_builder_does(spark) -> None:
    """The jar tells most records by walking their tokens, and hands the
    rest to Spark's variant builder: wherever the walk answers, on the
    mutated lines and the table above, the builder gives the same verdict,
    and the walk answers for most of them (else it saves nothing)."""
    check = spark.sparkContext._jvm.splice.json.RecordCheck
    lines = mutated_lines(2000) + [line for line, _ in VERDICTS]
    walked = [check.walkedVerdict(line) for line in lines]
    exact = [check.exactVerdict(line) for line in lines]
    assert [(line, w, e) for line, w, e in zip(lines, walked, exact, strict=True)
            if w is not None and w != e] == []
    answered = {v: sum(w == v for w in walked) for v in ("whole", "trailing", "not-object")}
    assert all(n > 50 for n in answered.values()), answered
    assert sum(answered.values()) > 0.8 * len(lines), answered


DEEP = '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"
# (line, the dead letter's reason) for the records the verdict calls
# not-object; the jar names each (issue 56), the expressions the first two.
REASONS = [
    ('{"id": 1, "id": 2}', "duplicate key 'id'"),
    ('{"id": 1, "x": {"n": 1, "\\u006e": 2}}', "duplicate key 'n'"),
    ('{"id": 1, "name": "\\ud800"}', "invalid escape \\ud800 (a lone surrogate)"),
    ('{"id": 1, "\\uDC00": 1}', "invalid escape \\udc00 (a lone surrogate)"),
    ('{"id": 1, "name": "\\\\ud800", "id": 3}', "duplicate key 'id'"),  # an escaped backslash
    ('\ufeff{"id": 1}', "byte order mark before the JSON object"),
    (' \ufeff{"id": 1}', "byte order mark before the JSON object"),
    (DEEP, "nested deeper than 1000 levels"),
    ('{"a": ' + "[" * 1001 + "]" * 1001 + '}', "nested deeper than 1000 levels"),
    ('{"id": 1,}', "not a JSON object"),
    ("[1]", "not a JSON object"),
    ('[{"id": 1, "id": 2}]', "not a JSON object"),  # an array, whatever it holds
    ('{"a": "\\udc00", "a": 1}', "invalid escape \\udc00 (a lone surrogate)"),  # the first
]


def test_a_rejected_record_is_told_by_its_own_reason(spark, warehouse) -> None:
    """Duplicate keys, a lone surrogate, a byte order mark and nesting past
    Jackson's limit each have their own reason in the dead letter (not
    "not a JSON object"), and the good records around them come out."""
    assert loads_splice_jar(spark)
    io = make_io(spark, warehouse, RAW_SQL, name="why")
    folder = warehouse.source_path("src")
    lines = ['{"id": 1, "name": "before"}']
    for n, (line, _) in enumerate(REASONS):
        lines += [line, f'{{"id": {100 + n}, "name": "after {n}"}}']
    _write_bytes(folder, "a.json", ("\n".join(lines) + "\n").encode())
    # A byte order mark that starts a file is the file's, not a line's:
    # Hadoop's line reader drops it, and the record is good (and whole,
    # though its line is 3 bytes shorter than the file).
    _write_bytes(folder, "b.json", '\ufeff{"id": 2, "name": "bom file"}\n'.encode())
    _write_bytes(folder, "c.json", '\ufeff{"id": 3, "name": "bom cut"}'.encode())
    reports = {r.step_id: r for r in run_pipeline(io.pipeline, io)}

    assert _dead_rows(spark, warehouse, "why", "src") == sorted(
        [(line, "utf-8", reason) for line, reason in REASONS]
        + [('{"id": 3, "name": "bom cut"}', "utf-8", "incomplete line")])
    assert reports["src"].dead_letters == len(REASONS) + 1
    assert sorted(output_rows(io, "latest", "id", "name")) == sorted(
        [(1, "before"), (2, "bom file")]
        + [(100 + n, f"after {n}") for n in range(len(REASONS))])


def test_the_reasons_without_the_jar(spark) -> None:
    """Spark's expressions (clusters, Spark Connect) name the byte order
    mark and the lone surrogate as the jar does; a duplicate key and deep
    nesting stay "not a JSON object" there (docs/decisions/README.md)."""
    frame = spark.createDataFrame([(line,) for line, _ in REASONS], "value string")
    jar = [r[0] for r in frame.select(object_reason(F.col("value"), spark)).collect()]
    expressions = [r[0] for r in frame.select(object_reason(F.col("value"), None)).collect()]
    assert jar == [reason for _, reason in REASONS]
    told = ("byte order mark", "invalid escape")
    assert expressions == [reason if reason.startswith(told) else "not a JSON object"
                           for _, reason in REASONS]

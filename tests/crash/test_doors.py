"""Nothing doubled through any door: a second writer of a pipeline, through
whichever door it comes (the CLI, Dagster; another spelling of the
warehouse; the same SQL reached as a file and as its folder), is refused
with the holder named, and writes nothing; the first ends as an
uninterrupted run would. The first writer is held in the middle of its
writes at a named commit point (``SPLICE_PAUSE_AT``, engine/faults.py), so
the rival comes at a known moment. A run whose lease cannot be renewed
stops before its next write, and a rerun gives the uninterrupted rows."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from dagster import materialize
from splice.engine.faults import PAUSE_ENV, PAUSE_FILE_ENV, RENEWAL_FAULT_ENV
from splice.engine.io import StepIO
from splice.orchestration.assets import build_assets
from splice.resources.spark import SparkResource
from splice.resources.warehouse import WarehouseResource
from splice.runtime.compile import compile_path
from splice.runtime.lock import LEASE_ENV
from splice.runtime.workspace import Workspace

from splice.cli import main
from tests.conftest import ROOT, child_env
from tests.helpers.pipeline import append, output_rows

pytestmark = [pytest.mark.spark, pytest.mark.faults]

SQL = """
CREATE STREAM orders (id INT, customer_id INT, item STRING) WITH (location='orders', key='id');
CREATE STREAM customers (id INT, name STRING) WITH (location='customers', key='id');
WITH customersTable AS (SELECT TABLE * FROM customers);
INSERT INTO enriched
SELECT STREAM o.id, o.item, c.name FROM orders AS o LEFT JOIN customersTable AS c
ON o.customer_id = c.id;
INSERT INTO big SELECT STREAM id, item FROM orders WHERE id > 2;
"""
ORDERS = [{"id": i, "customer_id": i % 2, "item": f"item{i}"} for i in range(1, 6)]
CUSTOMERS = [{"id": 0, "name": "Ann"}, {"id": 1, "name": "Bob"}]
ENRICHED = sorted(((o["id"], o["item"], "Bob" if o["id"] % 2 else "Ann") for o in ORDERS),
                  key=repr)
BIG = sorted(((o["id"], o["item"]) for o in ORDERS if o["id"] > 2), key=repr)


def _pipeline(tmp_path: Path, folder: str = "shop", file: str = "shop.sql") -> Path:
    path = tmp_path / folder
    path.mkdir(exist_ok=True)
    (path / file).write_text(SQL)
    return path


def _seed(spark: Any, root: str, pipeline_path: Path) -> StepIO:
    io = Workspace(compile_path(pipeline_path), warehouse=WarehouseResource(root=root),
                   spark=spark).io
    append(io, "customers", CUSTOMERS)
    append(io, "orders", ORDERS)
    return io


def _assert_uninterrupted(io: StepIO) -> None:
    """Every output as one uninterrupted run leaves it."""
    assert output_rows(io, "enriched", "id", "item", "name") == ENRICHED
    assert output_rows(io, "big", "id", "item") == BIG


def _files(root: Path) -> dict[str, int]:
    """Every file under the warehouse, with its size: what a refused rival
    would have written shows here."""
    return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*") if p.is_file()}


def _claims(root: Path) -> dict[str, str]:
    """What a rival could leave before its first write: the pipelines'
    folders, their owner files and the output claims, with their content."""
    splice = root / "_splice"
    found = {p.name: "" for p in splice.iterdir()}
    for path in [*splice.glob("*/owner.json"), *splice.glob("output-claims/*")]:
        found[str(path.relative_to(root))] = path.read_text()
    return found


class Paused:
    """A writer held at ``output-committed`` of its first step that gets
    there, until :meth:`release`."""

    def __init__(self, tmp_path: Path) -> None:
        self.flag = tmp_path / "go"
        self.env = {PAUSE_ENV: "output-committed@*", PAUSE_FILE_ENV: str(self.flag)}

    def wait_reached(self, proc: subprocess.Popen | None = None, within: float = 240) -> None:
        deadline = time.monotonic() + within
        while not Path(f"{self.flag}.reached").exists():
            assert proc is None or proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the first writer never reached its pause"
            time.sleep(0.1)

    def release(self) -> None:
        self.flag.write_text("go")


def _cli_in_child(pipeline: Path, root: str, env: dict[str, str]) -> subprocess.Popen:
    # One step at a time: paused at its first commit point, the run writes
    # nothing else, and every file of the warehouse stays as it is.
    return subprocess.Popen([sys.executable, "-m", "splice.cli", "run", str(pipeline),
                             "--warehouse", root, "--parallel", "1"], cwd=ROOT,
                            env=child_env(**env),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _dagster(pipeline: Path, root: str):
    return materialize(build_assets(compile_path(pipeline)), raise_on_error=False,
                       resources={"spark": SparkResource(),
                                  "warehouse": WarehouseResource(root=root)})


def _failure(result) -> str:
    failures = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    assert failures, "the run did not fail"
    return failures[0].step_failure_data.error.message


@pytest.fixture
def spellings(tmp_path: Path) -> tuple[str, str, str]:
    """The warehouse as a path, as a ``file://`` URI with a trailing slash,
    and through a symbolic link."""
    real = tmp_path / "wh"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    return str(real), f"file://{real}/", str(tmp_path / "link")


def test_cli_against_cli_under_two_spellings(spark, tmp_path: Path, spellings, capsys) -> None:
    plain, uri, _ = spellings
    shop = _pipeline(tmp_path)
    io = _seed(spark, plain, shop)
    paused = Paused(tmp_path)
    first = _cli_in_child(shop, plain, paused.env)
    paused.wait_reached(first)
    before = _files(Path(plain))
    assert main(["run", str(shop), "--warehouse", uri]) == 1
    err = capsys.readouterr().err
    assert f"splice: pipeline 'shop' is being run by pid {first.pid} on " in err
    assert f"lock {plain}/_splice/shop/run.lock. Not started" in err
    assert "Traceback" not in err
    assert _files(Path(plain)) == before  # the rival wrote nothing
    paused.release()
    _out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    _assert_uninterrupted(io)
    # A later run under the other spelling finds the same checkpoints: nothing
    # new, nothing doubled.
    assert main(["run", str(shop), "--warehouse", uri]) == 0
    _assert_uninterrupted(io)
    assert sorted(p.name for p in (Path(plain) / "_splice").iterdir()) == \
        ["output-claims", "shop"]


def test_cli_against_dagster(spark, tmp_path: Path, spellings, monkeypatch) -> None:
    plain, _, link = spellings
    shop = _pipeline(tmp_path)
    io = _seed(spark, plain, shop)
    monkeypatch.setenv("SPLICE_DAGSTER_LOCK_WAIT", "0")
    paused = Paused(tmp_path)
    first = _cli_in_child(shop, link, paused.env)
    paused.wait_reached(first)
    before = _files(Path(plain))
    message = _failure(_dagster(shop, f"file://{plain}"))
    assert f"pipeline 'shop' is being run by pid {first.pid} on " in message
    assert f"lock {plain}/_splice/shop/run.lock" in message
    assert _files(Path(plain)) == before
    paused.release()
    assert first.wait(timeout=300) == 0
    _assert_uninterrupted(io)


def _dagster_in_thread(shop: Path, root: str, results: list[Any]) -> threading.Thread:
    thread = threading.Thread(target=lambda: results.append(_dagster(shop, root)))
    thread.start()
    return thread


def test_dagster_against_cli_and_dagster(spark, tmp_path: Path, spellings, capsys,
                                         monkeypatch) -> None:
    """A Dagster run holds the pipeline: the CLI and a second Dagster run,
    each under another spelling, are refused, naming the Dagster run."""
    plain, uri, link = spellings
    shop = _pipeline(tmp_path)
    io = _seed(spark, plain, shop)
    monkeypatch.setenv("SPLICE_DAGSTER_LOCK_WAIT", "0")
    paused = Paused(tmp_path)
    for name, value in paused.env.items():
        monkeypatch.setenv(name, value)
    results: list[Any] = []
    thread = _dagster_in_thread(shop, link, results)
    paused.wait_reached()
    monkeypatch.delenv(PAUSE_ENV)
    # The Dagster run's other steps go on side by side until each pauses or
    # ends: what the rivals could have written is their claims.
    before = _claims(Path(plain))
    assert main(["run", str(shop), "--warehouse", uri]) == 1
    err = capsys.readouterr().err
    assert "splice: pipeline 'shop' is being run by pid" in err
    assert "(dagster run " in err and ", pipeline shop)" in err
    message = _failure(_dagster(shop, uri))
    assert "pipeline 'shop' is being run by pid" in message and "(dagster run " in message
    assert _claims(Path(plain)) == before
    paused.release()
    thread.join(timeout=300)
    assert results and results[0].success
    _assert_uninterrupted(io)


def test_a_file_and_its_folder_are_one_pipeline_or_refused(spark, tmp_path: Path, capsys,
                                                           monkeypatch) -> None:
    """Dagster loads ``pipes/`` (a folder of .sql files: pipeline 'pipes');
    `splice run pipes/e3.sql` names the same SQL 'e3'. Whichever comes
    second is refused by the outputs' claims, in both orders, and writes
    nothing: the outputs hold one run's rows, not two."""
    monkeypatch.setenv("SPLICE_DAGSTER_LOCK_WAIT", "0")
    for order, root in (("dagster first", tmp_path / "wh1"), ("cli first", tmp_path / "wh2")):
        pipes = _pipeline(tmp_path, "pipes", "e3.sql")
        io = _seed(spark, str(root), pipes)
        if order == "dagster first":
            assert _dagster(pipes, str(root)).success
            before = _files(root)
            assert main(["run", str(pipes / "e3.sql"), "--warehouse", str(root)]) == 1
            err = capsys.readouterr().err
            assert f"{pipes}/e3.sql is a file of pipeline 'pipes' (the folder {pipes})" in err
            assert f"run the folder as the pipeline it is (splice run {pipes})" in err
        else:
            assert main(["run", str(pipes / "e3.sql"), "--warehouse", str(root)]) == 0
            before = _files(root)
            message = _failure(_dagster(pipes, str(root)))
            assert (f"pipeline 'pipes' ({pipes}) cannot write output 'big' on warehouse {root}: "
                    f"its file {pipes}/e3.sql was run alone as pipeline 'e3', which already "
                    f"writes it; keep running that file as it was") in message
        assert _files(root) == before, order
        _assert_uninterrupted(io)


@pytest.mark.s3
def test_a_run_whose_lease_cannot_be_renewed_stops_and_a_rerun_completes(
        spark, s3_server, tmp_path: Path, capsys, monkeypatch) -> None:
    """On S3 the lock is a lease. Every renewal fails (an outage of the
    store for the lease): the run, held past its lease's deadline, stops
    before its next write and says why; a second holder could take the
    lease only later. The rerun gives the uninterrupted rows."""
    root = s3_server.uri("renewal")
    shop = _pipeline(tmp_path)
    io = _seed(spark, root, shop)
    monkeypatch.setenv(LEASE_ENV, "3")
    paused = Paused(tmp_path)
    for name, value in paused.env.items():
        monkeypatch.setenv(name, value)
    codes: list[int] = []
    thread = threading.Thread(target=lambda: codes.append(
        main(["run", str(shop), "--warehouse", root, "--parallel", "1"])))
    thread.start()
    paused.wait_reached()  # in the middle of its writes, its lease renewed so far
    monkeypatch.setenv(RENEWAL_FAULT_ENV, "all")  # from now on the store fails renewals
    time.sleep(3.0)  # past the deadline (two thirds of the 3 s lease), and the expiry
    monkeypatch.delenv(PAUSE_ENV)
    paused.release()
    thread.join(timeout=300)
    err = capsys.readouterr().err
    assert codes == [1], err
    assert "splice: pipeline 'shop' stopped: it no longer holds its lock " \
           f"({root}/_splice/shop/run.lease): its lease could not be renewed before its " \
           "deadline (" in err
    assert "run it again to continue where it stopped" in err
    assert "Traceback" not in err
    monkeypatch.delenv(RENEWAL_FAULT_ENV)
    assert main(["run", str(shop), "--warehouse", root]) == 0
    _assert_uninterrupted(io)
    assert os.environ.get(PAUSE_ENV) is None


@pytest.mark.parametrize("taken", ["claim", "lock file"])
def test_a_run_that_loses_a_claim_or_its_lock_file_stops_and_a_rerun_completes(
        spark, tmp_path: Path, capsys, monkeypatch, taken: str) -> None:
    """Mid-run, an output's claim is taken by another pipeline, or the lock
    file is removed (someone cleaning ``_splice/``): the run stops before
    its next write, says why, and the rerun (the claim given back) gives
    the uninterrupted rows."""
    root = tmp_path / "wh"
    shop = _pipeline(tmp_path)
    io = _seed(spark, str(root), shop)
    paused = Paused(tmp_path)
    for name, value in paused.env.items():
        monkeypatch.setenv(name, value)
    codes: list[int] = []
    thread = threading.Thread(target=lambda: codes.append(
        main(["run", str(shop), "--warehouse", str(root), "--parallel", "1"])))
    thread.start()
    paused.wait_reached()
    claim = root / "_splice" / "output-claims" / "big.json"
    mine = claim.read_text()
    if taken == "claim":
        claim.write_text('{"pipeline": "other", "origin": "/elsewhere/other", "output": "big"}')
        time.sleep(6.0)  # the watcher reads the claims every 5 s
        expected = (f"the claim on output 'big' ({claim}) now names pipeline 'other' "
                    "(/elsewhere/other)")
    else:
        (root / "_splice" / "shop" / "run.lock").unlink()
        time.sleep(1.0)
        expected = f"its lock file {root}/_splice/shop/run.lock was removed or replaced"
    monkeypatch.delenv(PAUSE_ENV)
    paused.release()
    thread.join(timeout=300)
    err = capsys.readouterr().err
    assert codes == [1], err
    assert (f"splice: pipeline 'shop' stopped: it no longer holds its lock "
            f"({root}/_splice/shop/run.lock): {expected}. It wrote nothing after that") in err
    claim.write_text(mine)
    assert main(["run", str(shop), "--warehouse", str(root)]) == 0
    _assert_uninterrupted(io)

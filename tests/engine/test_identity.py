"""One identity per warehouse: every spelling of a location names one lock,
one set of claims and one set of checkpoints (engine/locations.py). Two
spellings once took two locks (the OS lock for ``/x/wh``, a lease for
``file:///x/wh``) and two runs wrote the same tables at once. No Spark: the
lock and the claims are plain files; tests/crash/test_doors.py runs pipelines
through the same doors."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from splice.engine.locations import canonical_location
from splice.resources.warehouse import WarehouseResource
from splice.runtime.claims import ClaimRefused, claim
from splice.runtime.compile import compile_path
from splice.runtime.lock import LockBusy, pipeline_lock

SQL = ("CREATE STREAM orders (id INT, item STRING) WITH (location='orders', key='id');\n"
       "INSERT INTO out SELECT STREAM id, item FROM orders;\n")


def _local_spellings(tmp_path: Path) -> list[str]:
    """Ten spellings of one local folder ``<tmp>/wh`` (the current directory
    is ``tmp_path``, for the relative one)."""
    real = tmp_path / "wh"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    (tmp_path / "sub").mkdir()
    return [str(real), f"{real}/", f"{real}//", f"file://{real}", f"file:{real}",
            f"file://localhost{real}/", "wh", f"{tmp_path}/sub/../wh", str(tmp_path / "link"),
            f"file://{tmp_path}/link/"]


def test_every_local_spelling_is_one_folder(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    spellings = _local_spellings(tmp_path)
    real = str((tmp_path / "wh").resolve())
    layouts = {s: WarehouseResource(root=s) for s in spellings}
    for spelling, wh in layouts.items():
        assert wh.uri() == real, spelling
        assert wh.pipeline_path("p") == f"{real}/_splice/p"
        assert wh.checkpoint_path("p", "s") == f"{real}/_splice/p/checkpoints/s"
        assert wh.output_claim_path("Out") == f"{real}/_splice/output-claims/out.json"


@pytest.mark.parametrize(("given", "canonical"), [
    ("s3a://bucket/wh", "s3a://bucket/wh"),
    ("s3://bucket/wh/", "s3a://bucket/wh"),
    ("s3n://bucket//wh", "s3a://bucket/wh"),
    ("S3A://Bucket/wh/", "s3a://bucket/wh"),
    ("s3a://bucket", "s3a://bucket"),
    ("s3://bucket/", "s3a://bucket"),
    ("gs://b/a//b/", "gs://b/a/b"),
    ("HDFS://nn:8020/wh/", "hdfs://nn:8020/wh"),
])
def test_every_spelling_of_an_object_store_folder_is_one_uri(given: str, canonical: str) -> None:
    assert canonical_location(given) == canonical
    assert WarehouseResource(root=given).pipeline_path("p") == f"{canonical}/_splice/p"


def test_a_file_uri_on_another_host_is_not_taken_for_a_local_folder() -> None:
    assert canonical_location("file://otherhost/x/wh") == "file://otherhost/x/wh"


def test_every_pair_of_spellings_takes_one_lock(tmp_path: Path, monkeypatch) -> None:
    """Held under one spelling, the lock is busy under every other one, with
    the holder named, and free again once released."""
    monkeypatch.chdir(tmp_path)
    spellings = _local_spellings(tmp_path)
    for first, second in itertools.permutations(spellings[:6], 2):
        with pipeline_lock(WarehouseResource(root=first), "p", wait=0,
                           owner=f"run as {first}") as me:
            with pytest.raises(LockBusy) as busy, \
                    pipeline_lock(WarehouseResource(root=second), "p", wait=0):
                pass
            assert busy.value.holder == me, (first, second)
            assert f"({me.command})" in str(busy.value)
    for spelling in spellings[6:]:  # relative, '..' and links against the plain path
        with pipeline_lock(WarehouseResource(root=spellings[0]), "p", wait=0), \
                pytest.raises(LockBusy), \
                pipeline_lock(WarehouseResource(root=spelling), "p", wait=0):
            pass
    assert not list((tmp_path / "wh").glob("_splice/p/run.lease"))  # never a lease


def test_two_spellings_share_their_claims(tmp_path: Path, monkeypatch) -> None:
    """A pipeline's claims under one spelling refuse a rival under another,
    naming the holder; the rival leaves no claim behind."""
    monkeypatch.chdir(tmp_path)
    spellings = _local_spellings(tmp_path)
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "pipeline.sql").write_text(SQL)
    first, rival = compile_path(tmp_path / "a"), compile_path(tmp_path / "b")
    claim(first, WarehouseResource(root=spellings[0]))
    for spelling in spellings[1:]:
        with pytest.raises(ClaimRefused) as refused:
            claim(rival, WarehouseResource(root=spelling))
        assert f"pipeline 'a' ({tmp_path / 'a'}) already writes it" in str(refused.value)
    assert sorted(p.name for p in (tmp_path / "wh" / "_splice").iterdir()) == \
        ["a", "output-claims"]


def test_a_file_run_alone_is_refused_where_its_folder_runs(tmp_path: Path) -> None:
    """The same SQL reached as its folder's pipeline (Dagster's and `splice
    run pipes` name it 'pipes') and as a file of its own (`splice run
    pipes/e3.sql` names it 'e3') is two pipelines: the second to claim the
    outputs is refused, and told to run the folder."""
    pipes = tmp_path / "pipes"
    pipes.mkdir()
    (pipes / "e3.sql").write_text(SQL)
    wh = WarehouseResource(root=str(tmp_path / "wh"))
    folder, file = compile_path(pipes), compile_path(pipes / "e3.sql")
    assert (folder.name, file.name) == ("pipes", "e3")
    claim(folder, wh)
    with pytest.raises(ClaimRefused) as refused:
        claim(file, wh)
    assert str(refused.value) == (
        f"pipeline 'e3' ({pipes}/e3.sql) cannot write output 'out' on warehouse "
        f"{tmp_path}/wh: {pipes}/e3.sql is a file of pipeline 'pipes' (the folder {pipes}), "
        f"which already writes it; run the folder as the pipeline it is (splice run {pipes}), "
        "not the file alone")
    assert not (tmp_path / "wh" / "_splice" / "e3").exists()

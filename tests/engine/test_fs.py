"""engine/fs.py without Spark: a local path, a ``file://`` URI and a URI that
goes through fsspec (its in-memory file system, standing in for an object
store) behave the same."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from splice.engine import fs


@pytest.fixture(params=["path", "file-uri", "fsspec"])
def folder(request, tmp_path: Path) -> str:
    if request.param == "path":
        return str(tmp_path / "f")
    if request.param == "file-uri":
        return f"file://{tmp_path}/f"
    return f"memory://splice-test-{uuid.uuid4().hex}/f"


def test_a_missing_folder_is_empty(folder: str) -> None:
    assert not fs.exists(None, folder)
    assert fs.list_names(None, folder) == []
    assert fs.list_files(None, folder) == []
    fs.remove_tree(None, folder)  # nothing there: no error
    assert not fs.exists(None, folder)


def test_write_read_list_remove(folder: str) -> None:
    before = int(time.time() * 1000) - 2000
    fs.write_text(None, f"{folder}/a.json", '{"x": 1}')
    fs.write_text(None, f"{folder}/b.txt", "héllo\n")
    fs.make_dirs(None, f"{folder}/sub")
    fs.write_text(None, f"{folder}/a.json", '{"x": 2}')  # replaced, not appended
    assert fs.read_text(None, f"{folder}/a.json") == '{"x": 2}'
    assert fs.read_text(None, f"{folder}/b.txt") == "héllo\n"
    assert fs.exists(None, f"{folder}/b.txt")
    assert fs.list_names(None, folder) == ["a.json", "b.txt", "sub"]
    files = fs.list_files(None, folder)
    assert [(name, size) for name, size, _ in files] == [("a.json", 8), ("b.txt", 7)]
    after = int(time.time() * 1000) + 2000
    assert all(before <= ms <= after for _, _, ms in files), files
    fs.remove_tree(None, folder)
    assert not fs.exists(None, f"{folder}/a.json")
    assert fs.list_names(None, folder) == []


def test_create_only_when_absent(folder: str) -> None:
    path = f"{folder}/claims/out.json"
    assert fs.create_text(None, path, "first")
    assert not fs.create_text(None, path, "second")
    assert fs.read_text(None, path) == "first"
    assert fs.list_names(None, f"{folder}/claims") == ["out.json"]  # no temporary left


def test_a_local_path_and_its_file_uri_are_one_file(tmp_path: Path) -> None:
    fs.write_text(None, str(tmp_path / "m.json"), "42")
    assert fs.read_text(None, f"file://{tmp_path}/m.json") == "42"
    assert fs.read_text(None, f"file:{tmp_path}/m.json") == "42"


def test_a_scheme_without_its_fsspec_package_names_the_fix() -> None:
    """gcsfs is not pinned (only S3 is), so gs:// names the package to add."""
    with pytest.raises(fs.FileSystemUnavailable) as err:
        fs.exists(None, "gs://bucket/wh/_splice/p/owner.json")
    text = str(err.value)
    assert text.startswith("no file system for gs:// URIs (")
    assert text.endswith("install gcsfs next to Splice to use a warehouse there")
    assert "\n" not in text

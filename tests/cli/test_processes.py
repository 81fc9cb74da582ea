"""Ending the servers this project starts, and their scripts' command line
(splice/processes.py). Real processes; no Spark."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest

from splice.processes import end, gone, group_alive, server_main, wait_until


def _ended(pid: int) -> bool:
    """Whether ``pid`` is gone or a zombie (dead, its status not collected
    by its new parent yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def test_end_stops_a_process_group_and_says_whether_one_ran() -> None:
    # A shell that ignores SIGTERM, and its child (which inherits that):
    # SIGKILL after the wait ends the whole group.
    proc = subprocess.Popen(["sh", "-c", "trap '' TERM; sleep 60 & echo $!; wait"],
                            start_new_session=True, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    child = int(proc.stdout.readline())
    assert group_alive(proc.pid)
    assert end(proc.pid, 0.5, group=True)
    # Returned once the whole group ended, the leader's child too.
    assert gone(proc.pid) and _ended(child) and not group_alive(proc.pid)
    assert not end(proc.pid, 0.5)


def test_end_of_a_group_left_only_a_zombie_says_none_ran() -> None:
    # The leader has exited and nobody collected its status: a zombie,
    # which still takes a signal, though nothing of the group runs.
    proc = subprocess.Popen(["true"], start_new_session=True)
    assert wait_until(lambda: _ended(proc.pid), 10, 0.05), "the process did not exit"
    assert Path(f"/proc/{proc.pid}").exists()  # a zombie, not gone yet
    assert not end(proc.pid, 0.5, group=True)
    assert not end(proc.pid, 0.5)


def test_a_servers_script_starts_stops_and_says_what_went_wrong(tmp_path: Path,
                                                               capsys) -> None:
    class Refused(Exception):
        pass

    running: set[Path] = set()

    def start(folder: Path) -> str:
        if folder.name == "bad":
            raise Refused("port 1 is taken")
        running.add(folder)
        return f"srv://{folder.name}"

    def stop(folder: Path) -> bool:
        return folder in running and not running.remove(folder)

    def run(*args: str) -> tuple[int, str, str]:
        code = server_main(list(args), script="srv.sh", what="server",
                           default_folder=tmp_path / "default", start=start, stop=stop,
                           error=Refused, more={"fetch": lambda: "fetched"})
        out, err = capsys.readouterr()
        return code, out.strip(), err.strip()

    assert run("start") == (0, "srv://default", "")
    assert run("stop") == (0, "stopped", "")
    assert run("stop", str(tmp_path / "other")) == (
        0, f"no server running in {tmp_path / 'other'}", "")
    assert run("start", str(tmp_path / "bad")) == (1, "", "splice: port 1 is taken")
    assert run("fetch") == (0, "fetched", "")
    assert run() == (2, "", "usage: srv.sh start|stop|fetch [FOLDER]")
    assert run("restart")[0] == 2


def test_a_cluster_whose_master_exits_is_said_at_once(tmp_path, monkeypatch) -> None:
    """The master and worker as real processes that exit at once (Spark's
    launcher replaced by ``sh -c 'exit 3'``: the only way to make Spark's
    master end while starting, and the branch nothing else reaches): the
    start says which exited and where the logs are, within seconds, not
    after the two minutes it waits for a worker."""
    from splice.testing import cluster

    monkeypatch.setattr(cluster, "_spark_class", lambda *args: ["sh", "-c", "exit 3"])
    began = time.monotonic()
    with pytest.raises(cluster.ClusterError) as err:
        cluster.start_cluster(tmp_path / "c")
    assert time.monotonic() - began < 10
    folder = (tmp_path / "c").resolve()
    # Both exit; the first look may find one of them still ending.
    assert re.fullmatch(r"the cluster did not start: the (master|worker)( and the worker)? "
                        rf"exited \(logs: {re.escape(str(folder))}/master\.log, "
                        rf"{re.escape(str(folder))}/worker\.log\)", str(err.value)), err.value

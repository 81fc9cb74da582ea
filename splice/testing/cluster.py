"""A Spark standalone cluster (one master, one worker) started from
pyspark's own jars on 127.0.0.1.

pip's pyspark ships ``bin/spark-class`` and every jar a standalone master
and worker need. ``bash scripts/cluster.sh start|stop [FOLDER]`` runs
:func:`main`; the test suite's ``cluster`` fixture calls
:func:`start_cluster` with a temporary folder. The folder holds the two
processes' logs and pids, the worker's work dir and ``master`` (the URL to
give ``--master`` / ``SPLICE_SPARK_MASTER``).

Executors run this checkout's Python (``PYSPARK_PYTHON``, with the
checkout first on ``PYTHONPATH``), as the driver does.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pyspark

from splice.processes import end, gone, server_main

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_FOLDER = ROOT / ".splice" / "cluster"
READY_SECONDS = 120.0
MASTER = "org.apache.spark.deploy.master.Master"
WORKER = "org.apache.spark.deploy.worker.Worker"


class ClusterError(RuntimeError):
    """The cluster could not be started; the message says why and where the
    logs are."""


@dataclass(frozen=True)
class Cluster:
    folder: Path
    port: int
    ui_port: int

    @property
    def master(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def state(self) -> dict:
        """The master's own JSON status (workers, applications)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json", timeout=5) as r:
            return json.loads(r.read())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _spark_class(*args: str) -> list[str]:
    return [str(Path(pyspark.__file__).parent / "bin" / "spark-class"), *args]


def _env() -> dict[str, str]:
    return {**os.environ, "SPARK_HOME": str(Path(pyspark.__file__).parent),
            "PYSPARK_PYTHON": sys.executable,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT),
                                                        os.environ.get("PYTHONPATH")]))}


def _start(folder: Path, name: str, args: list[str]) -> int:
    with open(folder / f"{name}.log", "ab") as out:
        process = subprocess.Popen(_spark_class(*args), stdout=out, stderr=subprocess.STDOUT,
                                   env=_env(), cwd=folder, start_new_session=True)
    (folder / f"{name}.pid").write_text(str(process.pid))
    return process.pid


def running(folder: Path) -> Cluster | None:
    """The cluster of ``folder`` when its master and worker are alive."""
    try:
        for name in ("master", "worker"):
            os.kill(int((folder / f"{name}.pid").read_text()), 0)
        port, ui_port = (int(p) for p in (folder / "ports").read_text().split())
    except (OSError, ValueError):
        return None
    return Cluster(folder, port, ui_port)


def start_cluster(folder: Path = DEFAULT_FOLDER, cores: int = 2,
                  memory: str = "2g") -> Cluster:
    """Start a master and one worker (``cores``, ``memory``) logging into
    ``folder``, and wait until the worker has registered; a cluster already
    running there is reused."""
    folder = folder.resolve()
    found = running(folder)
    if found is not None:
        return found
    folder.mkdir(parents=True, exist_ok=True)
    cluster = Cluster(folder, _free_port(), _free_port())
    (folder / "ports").write_text(f"{cluster.port} {cluster.ui_port}")
    pids = {
        "master": _start(folder, "master", [MASTER, "--host", "127.0.0.1", "--port",
                                            str(cluster.port), "--webui-port",
                                            str(cluster.ui_port)]),
        "worker": _start(folder, "worker", [WORKER, "--host", "127.0.0.1", "--cores", str(cores),
                                            "--memory", memory, "--webui-port",
                                            str(_free_port()), "--work-dir",
                                            str(folder / "work"), cluster.master])}
    deadline = time.monotonic() + READY_SECONDS
    while not _worker_alive(cluster):
        # A master or worker that exited is said at once, not after the timeout.
        exited = [name for name, pid in pids.items() if gone(pid)]
        if exited or time.monotonic() > deadline:
            stop_cluster(folder)
            why = (f"the {' and the '.join(exited)} exited" if exited
                   else f"it did not start in {READY_SECONDS:.0f} s")
            raise ClusterError(f"the cluster did not start: {why} (logs: "
                               f"{folder / 'master.log'}, {folder / 'worker.log'})")
        time.sleep(1)
    (folder / "master").write_text(cluster.master)
    return cluster


def _worker_alive(cluster: Cluster) -> bool:
    try:
        return int(cluster.state().get("aliveworkers", 0)) >= 1
    except (OSError, ValueError):
        return False


def stop_cluster(folder: Path = DEFAULT_FOLDER) -> bool:
    """Stop the worker, then the master, of ``folder``; False when neither
    was running."""
    stopped = False
    for name in ("worker", "master"):
        try:
            pid = int((folder.resolve() / f"{name}.pid").read_text())
        except (OSError, ValueError):
            continue
        stopped = end(pid, 10, group=True) or stopped
    return stopped


def main(argv: list[str] | None = None) -> int:
    return server_main(argv, script="cluster.sh", what="cluster", default_folder=DEFAULT_FOLDER,
                       start=lambda folder: start_cluster(folder).master, stop=stop_cluster,
                       error=ClusterError)


if __name__ == "__main__":
    raise SystemExit(main())

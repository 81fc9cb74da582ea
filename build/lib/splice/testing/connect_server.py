"""A Spark Connect server started from pyspark's own jars, with Delta.

pip's pyspark ships ``jars/spark-connect_2.13-*.jar`` but no start script:
the server is ``spark-submit --class ...SparkConnectServer`` with Delta's
jars and the Spark settings a classic session of Splice starts with
(engine/session.py: Splice's own, then the user's), launched as a local
session is (``driver_launch``), listening on 127.0.0.1. Delta's Connect
plugin is not used (it is not served here), so the engine reaches Delta
through SQL (engine/delta_sql.py).

A step's micro-batches run in the server's Python worker, which unpickles
Splice's functions by module name: the server runs this checkout's Python
(``PYSPARK_PYTHON``) with this checkout first on ``PYTHONPATH``. A server
elsewhere needs the same Splice version importable by its Python.

``bash scripts/connect.sh start|stop [FOLDER]`` runs :func:`main`; the test
suite's ``connect`` fixture calls :func:`start_server` with a temporary
folder. The folder holds ``server.log``, ``server.pid`` and ``url``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pyspark

from splice.engine.session import DIST_CLASS_PATH, dist_class_path, driver_launch, spark_conf
from splice.engine.settings import SpliceSettings
from splice.processes import end, server_main

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_FOLDER = ROOT / ".splice" / "connect"
CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
MASTER = "local[*]"
READY_SECONDS = 180.0


class ConnectServerError(RuntimeError):
    """The server could not be started or stopped; the message says why and
    where its log is."""


@dataclass(frozen=True)
class Server:
    folder: Path
    port: int
    pid: int

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"


def delta_package() -> str:
    """Delta's Maven coordinate for the installed delta-spark and pyspark."""
    spark = ".".join(pyspark.__version__.split(".")[:2])
    return f"io.delta:delta-spark_{spark}_2.13:{metadata.version('delta-spark')}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _command(port: int, driver_memory: str, extra: dict[str, str]
             ) -> tuple[list[str], dict[str, str]]:
    """The server's ``spark-submit`` command and what its environment adds."""
    settings = SpliceSettings.from_env(driver_memory=driver_memory)
    # Every setting a classic session starts with, the user's included
    # (SPLICE_SPARK_CONF, splice.yaml, the S3 shorthand): a client cannot
    # send the ones read when the JVM starts (executor sizes, Java options).
    conf = {**spark_conf(settings), **extra, "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(port)}
    # Connectors (SPLICE_SPARK_PACKAGES, e.g. Kafka's) are the server's to
    # load: a Connect client cannot add packages. The server's master is
    # local, so it is launched as a local session is: the jars an earlier
    # start recorded on its classpath (no resolution at each start, none
    # copied into its temporary folder), Hadoop's local file system without
    # a process per file, classes from the archive.
    packages = list(settings.packages)
    launch = driver_launch(MASTER, conf, packages)
    conf.update(launch.conf)
    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    args = [str(submit), "--master", MASTER, "--class", CLASS]
    env: dict[str, str] = {}
    if launch.class_path is None:
        args += ["--packages", ",".join([delta_package(), *packages])]
    else:
        env[DIST_CLASS_PATH] = dist_class_path(launch.class_path, os.environ.get(DIST_CLASS_PATH))
    for key, value in conf.items():
        args += ["--conf", f"{key}={value}"]
    return args, env


def running(folder: Path) -> Server | None:
    """The server this folder's pid file names, when it is alive."""
    try:
        pid = int((folder / "server.pid").read_text())
        port = int((folder / "url").read_text().rsplit(":", 1)[1])
        os.kill(pid, 0)
    except (OSError, ValueError, IndexError):
        return None
    return Server(folder, port, pid)


def start_server(folder: Path = DEFAULT_FOLDER, port: int | None = None,
                 driver_memory: str = "2g", python: str | None = None,
                 conf: dict[str, str] | None = None) -> Server:
    """Start a server logging into ``folder`` and wait until its port
    answers; one already running there is reused. ``python`` is the program
    the server's Python workers run (default: this interpreter); ``conf``
    is Spark settings over the session's (the test suite's, for its server)."""
    folder = folder.resolve()
    found = running(folder)
    if found is not None:
        return found
    folder.mkdir(parents=True, exist_ok=True)
    port = port or _free_port()
    env = {**os.environ, "PYSPARK_PYTHON": python or sys.executable,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT),
                                                       os.environ.get("PYTHONPATH")]))}
    command, added = _command(port, driver_memory, conf or {})
    env.update(added)
    with open(folder / "server.log", "ab") as out:
        process = subprocess.Popen(command, stdout=out,
                                   stderr=subprocess.STDOUT, env=env, cwd=folder,
                                   start_new_session=True)
    server = Server(folder, port, process.pid)
    (folder / "server.pid").write_text(str(process.pid))
    (folder / "url").write_text(server.url)
    deadline = time.monotonic() + READY_SECONDS
    while not _answers(port):
        if process.poll() is not None or time.monotonic() > deadline:
            stop_server(folder)
            raise ConnectServerError(
                f"the Spark Connect server did not start (log: {folder / 'server.log'})")
        time.sleep(1)
    return server


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def stop_server(folder: Path = DEFAULT_FOLDER) -> bool:
    """Stop the server of ``folder`` (its whole process group); False when
    none was running."""
    server = running(folder.resolve())
    return server is not None and end(server.pid, 30, group=True)


def main(argv: list[str] | None = None) -> int:
    return server_main(argv, script="connect.sh", what="server", default_folder=DEFAULT_FOLDER,
                       start=lambda folder: start_server(folder).url, stop=stop_server,
                       error=ConnectServerError)


if __name__ == "__main__":
    raise SystemExit(main())

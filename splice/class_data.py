"""Writes the class-data archive sessions' driver JVMs start from
(engine/class_data.py): ``python -m splice.class_data [--force]``, which
``scripts/setup.sh`` runs once per checkout.

A ``splice demo`` in a child process, into a temporary warehouse, with its
JVM told to write the classes it loaded when it exits. The JVM exits after
the child (PySpark's JVM ends when its Python's pipe closes) and writes for
a while after: the archive is written to a temporary name and moved into
place only once that JVM is gone, so a session never maps half a file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from splice.engine import jars
from splice.engine.class_data import JAVA_OPTIONS, archive_path, writing_options
from splice.engine.session import spark_conf
from splice.engine.settings import ENV, SpliceSettings

ROOT = Path(__file__).resolve().parent.parent
WAIT_SECONDS = 600.0
RESOLVE = "from engine.session import start_session; start_session().range(1).count()"


def _writers(temp: str) -> list[int]:
    """The processes (a JVM) whose command line names ``temp``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                if temp.encode() in fh.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def _wait_written(temp: str) -> None:
    """Until the JVM writing ``temp`` is gone (or, without ``/proc``, until
    the file stops growing)."""
    deadline = time.monotonic() + WAIT_SECONDS
    if os.path.isdir("/proc"):
        while _writers(temp) and time.monotonic() < deadline:
            time.sleep(1)
        return
    size = -1
    while time.monotonic() < deadline:
        now = os.path.getsize(temp) if os.path.exists(temp) else -1
        if now == size and now > 0:
            return
        size = now
        time.sleep(5)


def write_archive(path: str) -> bool:
    """Run the demo in a JVM that writes its classes to ``path``; False
    (and the archive untouched) when that failed."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    temp = f"{path}.{os.getpid()}.tmp"
    settings = SpliceSettings.from_env(project_dir=ROOT)
    conf = {**settings.conf, JAVA_OPTIONS: writing_options(spark_conf(settings), temp)}
    # a local JVM: the one sessions of this checkout start
    env = {k: v for k, v in os.environ.items()
           if k not in (ENV["connect_url"], "SPLICE_SPARK_CONNECT")}
    env[ENV["master"]] = "local[2]"
    if jars.recorded(settings.packages) is None:
        # Delta's jars resolved and recorded first, by a session of their
        # own: the demo's JVM then has them on its classpath as every later
        # local session does, and the archive holds Delta's classes too.
        subprocess.run([sys.executable, "-c", RESOLVE], cwd=ROOT, env=env,
                       capture_output=True, text=True)
    env[ENV["conf"]] = json.dumps(conf)
    with tempfile.TemporaryDirectory(prefix="splice-classes-") as warehouse:
        done = subprocess.run([sys.executable, "-m", "splice.cli", "demo", "--warehouse",
                               warehouse],
                              cwd=ROOT, env=env, capture_output=True, text=True)
        _wait_written(temp)
    if done.returncode != 0 or not os.path.isfile(temp) or os.path.getsize(temp) == 0:
        print(done.stdout[-2000:] + done.stderr[-2000:], file=sys.stderr)
        if os.path.exists(temp):
            os.remove(temp)
        return False
    os.replace(temp, path)
    return True


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    path = archive_path()
    if path is None:
        print("class-data archive: off (SPLICE_CLASS_ARCHIVE=off)")
        return 0
    if os.path.isfile(path) and "--force" not in args:
        print(f"class-data archive: {path}")
        return 0
    start = time.monotonic()
    if not write_archive(path):
        # Not fatal: sessions start without it, only slower.
        print("class-data archive: not written (the demo failed, above); sessions start "
              "without one", file=sys.stderr)
        return 0
    print(f"class-data archive: {path} (written in {time.monotonic() - start:.0f}s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

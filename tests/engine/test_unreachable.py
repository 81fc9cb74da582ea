"""A master or a Connect server that does not answer is one message naming
the setting to fix, before Spark starts (no JVM, no minutes of retries).
Each run is a process of its own, as a user runs it: a process that already
has a session keeps it, whatever the settings say."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(("variable", "url", "fix"), [
    ("SPLICE_SPARK_MASTER", "spark://127.0.0.1:{port}",
     "start it (bash scripts/cluster.sh start prints its URL) or fix --master / "
     "SPLICE_SPARK_MASTER"),
    ("SPLICE_SPARK_REMOTE", "sc://127.0.0.1:{port}",
     "start it (bash scripts/connect.sh start prints its URL) or fix --connect / "
     "SPLICE_SPARK_REMOTE"),
])
def test_an_unreachable_spark_is_one_message(variable: str, url: str, fix: str,
                                             tmp_path: Path) -> None:
    port = _closed_port()
    env = {k: v for k, v in os.environ.items()
           if k not in ("SPLICE_SPARK_MASTER", "SPLICE_SPARK_REMOTE", "SPLICE_SPARK_CONNECT")}
    env[variable] = url.format(port=port)
    done = subprocess.run([sys.executable, "-m", "splice.cli", "run", "pipelines/demo",
                           "--warehouse", str(tmp_path / "wh")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr == (f"splice: cannot reach {url.format(port=port)} (127.0.0.1:{port}: "
                           f"Connection refused): {fix}\n")

"""moto's S3 server (PyPI ``moto[server]``, a development dependency) on
127.0.0.1, with one bucket: the S3 API the tests (and a user trying an
``s3a://`` warehouse without a cloud account) run Splice against. Started
as the project starts its other servers (``splice.testing``), never mocked
in the process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

KEY = SECRET = "testing"  # moto accepts any credentials


@dataclass
class S3Server:
    """A running moto server and its bucket."""

    endpoint: str
    bucket: str
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    log: IO[str] | None = field(default=None, repr=False)

    def spark_conf(self) -> dict[str, str]:
        """S3A's settings for this server, as a user writes them in
        SPLICE_SPARK_CONF or splice.yaml."""
        a = "spark.hadoop.fs.s3a."
        return {f"{a}endpoint": self.endpoint, f"{a}path.style.access": "true",
                f"{a}connection.ssl.enabled": "false", f"{a}access.key": KEY,
                f"{a}secret.key": SECRET, f"{a}endpoint.region": "us-east-1"}

    def env(self) -> dict[str, str]:
        """The same through the environment: SPLICE_S3_ENDPOINT and AWS's keys."""
        return {"SPLICE_S3_ENDPOINT": self.endpoint, "AWS_ACCESS_KEY_ID": KEY,
                "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_REGION": "us-east-1"}

    def uri(self, *parts: str) -> str:
        return "/".join([f"s3a://{self.bucket}", *parts])

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
        if self.log is not None:
            self.log.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_s3_server(folder: Path, bucket: str = "splice-test", timeout: float = 30) -> S3Server:
    """moto's server on a free port of 127.0.0.1, its log in ``folder``,
    with ``bucket`` created; :meth:`S3Server.stop` stops it."""
    port = _free_port()
    log = open(folder / "moto.log", "w")  # noqa: SIM115  (closed by stop)
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1",
                             "-p", str(port)], stdout=log, stderr=subprocess.STDOUT)
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                log.close()
                raise RuntimeError(f"moto's S3 server did not start on {endpoint}") from None
            time.sleep(0.2)
    server = S3Server(endpoint=endpoint, bucket=bucket, process=proc, log=log)
    req = urllib.request.Request(f"{endpoint}/{server.bucket}", method="PUT")
    urllib.request.urlopen(req, timeout=5).close()  # create the bucket
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    return server

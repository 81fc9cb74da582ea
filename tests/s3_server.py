"""moto's S3 server (PyPI ``moto[server]``) on 127.0.0.1, for the ``s3``
tests: one server and one bucket per test session."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from splice.engine.storage import HADOOP_AWS

__all__ = ["HADOOP_AWS", "S3Server", "s3_server"]

KEY = SECRET = "testing"  # moto accepts any credentials


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    bucket: str

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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    port = _free_port()
    log = open(tmp_path_factory.mktemp("moto") / "moto.log", "w")  # noqa: SIM115
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1",
                             "-p", str(port)], stdout=log, stderr=subprocess.STDOUT)
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError(f"moto's S3 server did not start on {endpoint}") from None
            time.sleep(0.2)
    server = S3Server(endpoint=endpoint, bucket="splice-test")
    req = urllib.request.Request(f"{endpoint}/{server.bucket}", method="PUT")
    urllib.request.urlopen(req, timeout=5).close()  # create the bucket
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    yield server
    proc.terminate()
    proc.wait(timeout=10)
    log.close()

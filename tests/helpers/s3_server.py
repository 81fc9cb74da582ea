"""The ``s3_server`` fixture: moto's S3 server (``splice.testing.s3_server``),
one server and one bucket per test session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from splice.engine.storage import HADOOP_AWS

from splice.testing.s3_server import S3Server, start_s3_server

__all__ = ["HADOOP_AWS", "S3Server", "s3_server"]


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    server = start_s3_server(tmp_path_factory.mktemp("moto"))
    yield server
    server.stop()

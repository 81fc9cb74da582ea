"""One SparkSession for the whole test run (real Spark, real Delta)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import schedule

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "tests" / "cases"

# A test's micro-batches hold a few rows, so Spark would spend most of a test
# generating Java code for every query it plans, compiling it, and having the
# JVM's JIT compile that in turn (the JIT alone took a third of the CPU of an
# acceptance case). The tests evaluate expressions interpreted instead, which
# Spark's own test suites run as a mode of equal standing: the rows are the
# same. Everything else (the demo, the benchmarks, a user's session) keeps
# Spark's defaults. See docs/decisions/README.md.
# Automatic maintenance (every 10th run compacts and vacuums every table of
# the pipeline) is off in the test session: the acceptance cases that run
# their pipeline once per record spent minutes compacting tables of a few
# rows. tests/runtime/test_maintenance.py runs it with an explicit policy, and the
# streams that read maintained tables are checked there.
os.environ.setdefault("SPLICE_MAINTAIN_EVERY", "0")

TEST_SPARK_CONF = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    # The tests' tables are tiny, so every change is a large share of them
    # and the cost-based choice would recompute every table-table join: the
    # suite runs the incremental plan, whose keyed bookkeeping is the part
    # to prove; the recompute and the choice have tests of their own
    # (tests/joins/test_table_plan*.py, the differential and chain tests).
    "splice.tableJoin.plan": "incremental",
}

# Every JVM the suite starts runs the JIT's first tier alone (C1), with a
# code cache large enough that its sweeper stays idle, and the serial
# collector (no concurrent GC threads on two cores). A test's child `splice
# run` (one killed at a commit point) lives a minute or less, and the
# optimizing compiler (C2) spent a third of its CPU compiling code it had no
# time to use: with C1 alone a crash-test child run to its last step took 68
# against 93 s of CPU; with the default code cache C1 fills and sweeps it,
# and the larger cache and the serial collector took such a child from 51-68
# to 43-52 s of CPU (four runs each, alternated, 2026-11-28). The suite's own
# sessions (one per xdist worker) plan thousands of small queries along ever
# new code paths, and C2 kept compiling them: over the acceptance file on two
# workers its threads took 152 to 157 s of the JVMs' 672 to 695 s of CPU;
# with these settings 602 and 572 s of CPU, 372 and 353 s against 401 and
# 411 s of wall time (docs/decisions/test-sessions.md). Users' sessions keep
# the JVM's defaults.
TEST_JAVA_OPTIONS = ("-Duser.timezone=UTC -XX:TieredStopAtLevel=1 "
                     "-XX:ReservedCodeCacheSize=256m -XX:+UseSerialGC")
TEST_CHILD_CONF = {**TEST_SPARK_CONF, "spark.driver.extraJavaOptions": TEST_JAVA_OPTIONS}


def child_env(conf: dict[str, str] | None = None, **env: str) -> dict[str, str]:
    """The environment of a process the suite starts that runs Splice in a
    JVM of its own (a ``splice`` command, Dagster's run worker): this
    process's, with 1 GB of driver heap and the short-lived JVMs' settings
    (``TEST_CHILD_CONF``, ``conf`` over them) in SPLICE_SPARK_CONF, and
    ``env`` over all. A child started without them ran on Spark's and the
    JVM's defaults, which cost a cold run about a third more CPU."""
    return {**os.environ, "SPLICE_DRIVER_MEMORY": "1g",
            "SPLICE_SPARK_CONF": json.dumps({**TEST_CHILD_CONF, **(conf or {})}), **env}


def suite_conf(java_options: str = "") -> dict[str, str]:
    """The Spark settings of the suite's own sessions: ``TEST_SPARK_CONF``,
    and ``TEST_JAVA_OPTIONS`` with ``java_options`` after them (also the
    suite's Spark Connect server's, which runs the steps of its tests)."""
    return {**TEST_SPARK_CONF,
            "spark.driver.extraJavaOptions": f"{TEST_JAVA_OPTIONS} {java_options}".strip()}


def suite_settings(java_options: str = "", conf: dict[str, str] | None = None) -> Any:
    """The settings of the suite's own sessions (:func:`suite_conf`),
    ``conf`` over them: the ``spark`` fixture's, and the benchmarks' that
    measure where the suite spends its time.

    2 GB of driver heap, not the default 4: a worker's session kept over
    the whole suite grew its heap to 4 GB (4.6 GB resident) with a live set
    of 540 MB after half an hour of tests (jcmd GC.heap_info after GC.run),
    and two such sessions beside the tests' child JVMs, the broker, the
    Connect server and the cluster left a machine little room."""
    from splice.engine.settings import SpliceSettings

    return SpliceSettings.from_env(driver_memory="2g",
                                   conf={**suite_conf(java_options), **(conf or {})})


@contextlib.contextmanager
def table_join_plan(spark: Any, plan: str, **settings: str) -> Iterator[None]:
    """Table-table joins take ``plan`` (auto, incremental, recompute), and
    the other ``splice.tableJoin.<name>`` ``settings``, in the runs inside;
    the suite's own settings after."""
    spark.conf.set("splice.tableJoin.plan", plan)
    for name, value in settings.items():
        spark.conf.set(f"splice.tableJoin.{name}", value)
    try:
        yield
    finally:
        spark.conf.set("splice.tableJoin.plan", TEST_SPARK_CONF["splice.tableJoin.plan"])
        for name in settings:
            spark.conf.unset(f"splice.tableJoin.{name}")


from tests.helpers.s3_server import HADOOP_AWS, s3_server  # noqa: E402, F401  (a fixture)

KAFKA_PACKAGES = ("org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0",)
AVRO_PACKAGES = ("org.apache.spark:spark-avro_2.13:4.2.0",)


@pytest.fixture(scope="session")
def spark(request: pytest.FixtureRequest):
    """Spark's Kafka connector joins Delta's only when a collected test
    carries the ``kafka`` marker (it adds 38 jars to resolve at start)."""
    from splice.engine.session import start_session

    kafka = any(item.get_closest_marker("kafka") for item in request.session.items)
    # hadoop-aws and S3A's settings for moto's server, only when an ``s3``
    # test is collected (the server starts first: S3A's endpoint is set at start).
    s3 = any(item.get_closest_marker("s3") for item in request.session.items)
    s3_conf = request.getfixturevalue("s3_server").spark_conf() if s3 else {}
    settings = suite_settings(conf=s3_conf)
    # spark-avro, for the Avro sources of the ``registry`` tests.
    avro = kafka and any(item.get_closest_marker("registry") for item in request.session.items)
    packages = (*(KAFKA_PACKAGES if kafka else ()), *((HADOOP_AWS,) if s3 else ()),
                *(AVRO_PACKAGES if avro else ()))
    # Under pytest-xdist each worker starts its own session: one at a time,
    # since Spark resolves the packages into one Ivy cache, which two
    # resolutions on a cold machine would download into at once.
    with open(Path(tempfile.gettempdir()) / "splice-test-spark-start.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        session = start_session(settings.with_packages(packages))
    yield session


@pytest.fixture
def warehouse(tmp_path: Path):
    """A WarehouseResource: an engine Warehouse that Dagster tests can also
    hand to their definitions as a resource."""
    from splice.resources.warehouse import WarehouseResource

    return WarehouseResource(root=str(tmp_path / "warehouse"))


@contextlib.contextmanager
def _exported(name: str, value: str) -> Iterator[None]:
    """``name`` set to ``value`` in this process's environment inside, and
    as it was after (a session's server address, for what the tests start)."""
    previous = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = previous


@pytest.fixture(scope="session")
def kafka(tmp_path_factory: pytest.TempPathFactory):
    """One Kafka broker for the test session (KRaft, single node, a temp
    folder), from the pinned jars (fetched with Maven when missing). Its
    bootstrap address; SPLICE_KAFKA_BOOTSTRAP is set to it for the session."""
    from splice.testing.kafka_broker import start_broker, stop_broker

    folder = tmp_path_factory.mktemp("kafka")
    broker = start_broker(folder)
    with _exported("SPLICE_KAFKA_BOOTSTRAP", broker.bootstrap):
        yield broker.bootstrap
    stop_broker(folder)


@pytest.fixture(scope="session")
def schema_registry(tmp_path_factory: pytest.TempPathFactory):
    """One schema registry for the test session (Apicurio's, in memory, its
    Confluent-compatible API), built with Maven the first time
    (splice/testing/schema_registry.py). Its URL, the API's path included;
    SPLICE_SCHEMA_REGISTRY_URL is set to it for the session. Its schemas
    live as long as it does: a test names its subjects after itself."""
    from splice.testing.schema_registry import start_registry, stop_registry

    folder = tmp_path_factory.mktemp("registry")
    registry = start_registry(folder)
    with _exported("SPLICE_SCHEMA_REGISTRY_URL", registry.url):
        yield registry.url
    stop_registry(folder)


# The markers of tests that share a server started once per worker (a
# session fixture: the broker, the schema registry, moto; a module fixture:
# a cluster, a Connect server, a webserver), in the order a test with two
# is grouped by.
SERVER_GROUPS = ("kafka", "registry", "connect", "cluster", "webserver", "s3")


def xdist_group(item: pytest.Item) -> str | None:
    """The worker group of a test: its server's marker, or None (any worker)."""
    return next((name for name in SERVER_GROUPS if item.get_closest_marker(name)), None)


# First: xdist's worker reads the groups in its own hook of this name.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``-n 2 --dist loadgroup``, as scripts/test.sh runs
    the suite) the tests that need one server (:data:`SERVER_GROUPS`) stay
    on one worker, so it starts once; every other test goes to whichever
    worker is free. tests/project/test_xdist_groups.py checks that the groups hold
    (with pytest 9.2, pytest-xdist 3.8 silently ignored them).

    First, a test that takes the ``spark`` fixture is a Spark test, marked or
    not: the fast subset (``-m "not spark"``) never starts a session (one
    unmarked test did, 25 of its 60 seconds)."""
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()) and not item.get_closest_marker("spark"):
            item.add_marker(pytest.mark.spark)
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        group = xdist_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    # The longest first (tests/helpers/schedule.py): a worker that finishes takes
    # the next in this order, and a long test taken last ran alone.
    items[:] = schedule.longest_first(items, lambda i: i.nodeid,
                                      lambda i: xdist_group(i) or i.nodeid,
                                      schedule.durations())


# A test that hangs fails, named, with every thread's stack, instead of the
# whole suite running into CI's limit (a CI run of the suite did, with no
# word of which test it was on). SIGALRM interrupts the blocking call the
# main thread waits in (a socket read to a JVM, a process wait) and the
# handler raises there, so the test's teardown runs and the worker goes on
# with the next test. Exiting the worker instead (faulthandler's exit=True)
# is worse under --dist loadgroup: pytest-xdist sends the crashed test to
# the replacement worker again, up to its restart limit. The limit is far
# above the longest test (the kill matrix, 417 s recorded, some 2.5x that
# on a loaded two-core machine); SPLICE_TEST_LIMIT_S=0 turns it off.
TEST_LIMIT_S = int(os.environ.get("SPLICE_TEST_LIMIT_S", "1500"))


def _over_limit(signum: int, frame: Any) -> None:
    import faulthandler
    import sys

    faulthandler.dump_traceback(file=sys.__stderr__, all_threads=True)
    # A teardown that hangs as well gets a second, final limit.
    faulthandler.dump_traceback_later(300, exit=True, file=sys.__stderr__)
    pytest.fail(f"the test ran longer than {TEST_LIMIT_S} s (SPLICE_TEST_LIMIT_S); "
                "every thread's stack is on the worker's stderr", pytrace=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    import faulthandler
    import signal

    if TEST_LIMIT_S <= 0:
        yield
        return
    previous = signal.signal(signal.SIGALRM, _over_limit)
    signal.alarm(TEST_LIMIT_S)
    try:
        yield
    finally:
        signal.alarm(0)
        faulthandler.cancel_dump_traceback_later()
        signal.signal(signal.SIGALRM, previous)

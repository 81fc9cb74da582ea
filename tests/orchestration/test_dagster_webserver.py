"""The real Dagster webserver and daemon (``dagster dev``) on 127.0.0.1,
driven as a client drives them: the GraphQL API launches the demo job (the
daemon dequeues it, and the run is a process of its own, as Dagster's
default run launcher starts it), and headless Chromium renders the asset
graph.

One webserver serves the module: a folder of pipelines holding the demo and
a broken pipeline, a fresh warehouse with the demo's data, a fresh
DAGSTER_HOME."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT, child_env

DEMO = ROOT / "pipelines" / "demo"
BROKEN_SQL = (
    "CREATE STREAM s (id INT, v STRING) WITH (location='s', key='id');\n"
    "INSERT INTO out_a SELECT STREAM id, nope FROM s;\n"
    "INSERT INTO out_b SELECT STREAM id, v FROM missing;\n")

pytestmark = [pytest.mark.webserver, pytest.mark.spark]
# Where a run of the demo can be held (engine/faults.paused): the join's first
# output commit, with five of its seven steps done.
HELD_AT = "output-committed@orders_enriched"


@dataclass(frozen=True)
class Webserver:
    port: int
    home: Path
    warehouse: Path
    flag: Path  # while it is missing, a run waits at HELD_AT

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def graphql(self, query: str, variables: dict | None = None) -> dict:
        request = urllib.request.Request(
            f"{self.url}/graphql", data=json.dumps({"query": query,
                                                    "variables": variables or {}}).encode(),
            headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            body = json.loads(response.read())
        assert "errors" not in body, body
        return body["data"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def webserver(tmp_path_factory: pytest.TempPathFactory, spark) -> Iterator[Webserver]:
    from splice.runtime.compile import compile_path

    from splice.cli.demo import write_demo_data

    base = tmp_path_factory.mktemp("webserver")
    pipelines, warehouse, home = base / "pipelines", base / "warehouse", base / "home"
    shutil.copytree(DEMO, pipelines / "demo")
    (pipelines / "broken").mkdir()
    (pipelines / "broken" / "broken.sql").write_text(BROKEN_SQL)
    home.mkdir()
    # no onboarding dialog over the UI, no telemetry
    (home / "dagster.yaml").write_text("nux:\n  enabled: false\ntelemetry:\n  enabled: false\n")
    write_demo_data(compile_path(DEMO), str(warehouse))
    port = _free_port()
    # Every run may be held mid-run (test_a_run_page_shows_steps_as_they_end):
    # runs pass while the flag file exists, as it does for the other tests.
    flag = base / "go"
    flag.write_text("go")
    env = child_env(DAGSTER_HOME=str(home), SPLICE_PIPELINES=str(pipelines),
                    SPLICE_WAREHOUSE=str(warehouse), SPLICE_PAUSE_AT=HELD_AT,
                    SPLICE_PAUSE_FILE=str(flag))
    log = open(base / "webserver.log", "wb")  # noqa: SIM115  (open for the server's life)
    process = subprocess.Popen(
        # `dagster dev`: the webserver and the daemon, which starts queued runs
        [sys.executable, "-m", "dagster", "dev", "-h", "127.0.0.1", "-p", str(port),
         "-w", str(ROOT / "workspace.yaml")], cwd=ROOT, env=env, stdout=log,
        stderr=subprocess.STDOUT, start_new_session=True)
    server = Webserver(port, home, warehouse, flag)
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(f"{server.url}/server_info", timeout=5):
                    break
            except OSError:
                assert process.poll() is None, (base / "webserver.log").read_text()[-3000:]
                assert time.monotonic() < deadline, "the webserver did not answer"
                time.sleep(1)
        yield server
    finally:
        os.killpg(process.pid, 15)
        process.wait(60)
        log.close()


def test_a_graphql_launched_run_materializes_the_demo_and_runs_its_checks(
        webserver: Webserver, spark) -> None:
    from dagster import AssetKey, DagsterEventType, DagsterInstance
    from dagster_graphql import DagsterGraphQLClient
    from splice.engine.settings import Warehouse
    from splice.engine.source_state import source_marker
    from splice.runtime.compile import compile_path

    client = DagsterGraphQLClient("127.0.0.1", port_number=webserver.port)
    run_id = client.submit_job_execution("demo_job")
    deadline = time.monotonic() + 900
    while (status := client.get_run_status(run_id).value) not in ("SUCCESS", "FAILURE",
                                                                   "CANCELED"):
        assert time.monotonic() < deadline, f"run {run_id} still {status}"
        time.sleep(2)
    assert status == "SUCCESS"

    instance = DagsterInstance.from_config(str(webserver.home))
    counts = {}
    for name in ("orders_enriched", "orders_matched", "customersTable"):
        record = instance.fetch_materializations(AssetKey(["demo", name]), limit=1).records[0]
        assert record.run_id == run_id
        counts[name] = record.asset_materialization.metadata["dagster/row_count"].value
    assert counts == {"orders_enriched": 3, "orders_matched": 2, "customersTable": 2}
    checks = {}
    for event in instance.all_logs(run_id, of_type=DagsterEventType.ASSET_CHECK_EVALUATION):
        evaluation = event.dagster_event.asset_check_evaluation_data
        checks[(evaluation.asset_key.to_user_string(), evaluation.check_name)] = \
            evaluation.passed
    # the demo writes one bad order: the dead-letter check warns, the others pass
    assert checks[("demo/orders", "no_dead_letters")] is False
    assert checks[("demo/orders_enriched", "schema_matches_plan")] is True
    assert checks[("demo/customersTable", "schema_matches_plan")] is True
    observed = instance.get_latest_data_version_record(AssetKey(["demo", "orders_data"]))
    assert observed is not None and observed.run_id == run_id
    # the observed version is the marker of the orders table: its newest Delta commit
    orders = compile_path(DEMO).sources["orders"]
    marker = source_marker(Warehouse(root=str(webserver.warehouse)), orders)
    assert marker.endswith(".json")
    assert observed.asset_observation.data_version == marker


def test_the_graph_shows_each_sources_data_as_an_observable_asset(webserver: Webserver) -> None:
    nodes = {}
    for name in ("orders_data", "orders"):
        data = webserver.graphql("""
            query ($path: [String!]!) {
              assetNodeOrError(assetKey: {path: $path}) {
                ... on AssetNode { isObservable isMaterializable dependencyKeys { path } }
              }
            }""", {"path": ["demo", name]})
        nodes[name] = data["assetNodeOrError"]
    assert nodes["orders_data"] == {"isObservable": True, "isMaterializable": False,
                                    "dependencyKeys": []}
    assert nodes["orders"] == {"isObservable": False, "isMaterializable": True,
                               "dependencyKeys": [{"path": ["demo", "orders_data"]}]}


def test_a_broken_pipeline_shows_every_error_and_fails_with_them(webserver: Webserver) -> None:
    data = webserver.graphql("""
        query ($path: [String!]!) {
          assetNodeOrError(assetKey: {path: $path}) { ... on AssetNode { description } }
        }""", {"path": ["broken", "sql_errors"]})
    description = data["assetNodeOrError"]["description"]
    # both errors, each at its file:line:col, none left out
    assert "until these 2 error(s) are fixed" in description
    assert "broken.sql:2:37: unknown column 'nope'; the columns are: id, v" in description
    assert ("broken.sql:3:44: unknown source or step 'missing'; declare it first with "
            "CREATE STREAM/TABLE/SOURCE or WITH; known names: s") in description


def test_chromium_renders_the_asset_graph(webserver: Webserver, tmp_path: Path) -> None:
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed (bash scripts/chromium.sh installs "
                    "it where apt-get can run as root or through passwordless sudo)")
    # the demo group's own lineage graph (the global one folds each group)
    page = f"{webserver.url}/locations/splice.orchestration.definitions/asset-groups/demo"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=30000",
             "--window-size=1400,900"]
    # The page renders once its code location has loaded: on a busy machine
    # that can take longer than one page load's time budget.
    for _ in range(5):
        dom = subprocess.run([chromium, *flags, "--dump-dom", page], check=True,
                             capture_output=True, text=True, timeout=180).stdout
        if "orders_enriched" in dom:
            break
        time.sleep(5)
    for asset in ("orders_enriched", "orders_matched", "customersTable", "orders_data",
                  "customers_data", "ordersStream"):
        assert asset in dom
    shot = tmp_path / "asset_graph.png"
    subprocess.run([chromium, *flags, f"--screenshot={shot}", page], check=True,
                   capture_output=True, timeout=180)
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000


def _run_status(webserver: Webserver, run_id: str) -> str:
    data = webserver.graphql("""
        query ($id: ID!) { runOrError(runId: $id) { ... on Run { status } } }""",
        {"id": run_id})
    return data["runOrError"]["status"]


def test_a_run_page_shows_steps_as_they_end(webserver: Webserver, tmp_path: Path,
                                             spark) -> None:
    """Live progress in the real webserver: a run held in its join still runs,
    and its event log (GraphQL, and the run's page in Chromium) already shows
    the steps that ended, materialized, with their log lines."""
    from dagster import DagsterEventType, DagsterInstance
    from dagster_graphql import DagsterGraphQLClient
    from splice.resources.warehouse import WarehouseResource
    from splice.runtime.compile import compile_path
    from splice.runtime.workspace import Workspace

    from splice.testing.cases import append_rows

    # New data, whatever ran before: a customer and her order.
    demo = compile_path(DEMO)
    io = Workspace(demo, warehouse=WarehouseResource(root=str(webserver.warehouse)),
                   spark=spark).io
    append_rows(io, demo.sources["customers"], [{"id": 9, "name": "Ann"}])
    append_rows(io, demo.sources["orders"], [{"id": 90, "customer_id": 9, "item": "Lamp"}])

    reached = Path(f"{webserver.flag}.reached")
    webserver.flag.unlink()
    reached.unlink(missing_ok=True)
    try:
        run_id = DagsterGraphQLClient("127.0.0.1", port_number=webserver.port) \
            .submit_job_execution("demo_job")
        deadline = time.monotonic() + 600
        while not reached.exists():
            assert _run_status(webserver, run_id) in ("QUEUED", "STARTING", "STARTED")
            assert time.monotonic() < deadline, "the run never reached its hold"
            time.sleep(1)
        instance = DagsterInstance.from_config(str(webserver.home))
        materialized = {e.dagster_event.asset_key.to_user_string() for e in instance.all_logs(
            run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION)}
        logged = [e.user_message for e in instance.all_logs(run_id)]
        assert _run_status(webserver, run_id) == "STARTED"
        assert {"demo/orders", "demo/customersTable", "demo/ordersStream"} <= materialized
        assert "demo/orders_enriched" not in materialized
        assert any(m.startswith("customersTable: 1 rows written in ") for m in logged), logged
        chromium = shutil.which("chromium")
        if chromium is not None:  # the run's page, mid-run, as a user sees it
            page = f"{webserver.url}/runs/{run_id}"
            flags = ["--headless", "--no-sandbox", "--disable-gpu",
                     "--virtual-time-budget=20000", "--window-size=1400,900"]
            dom = subprocess.run([chromium, *flags, "--dump-dom", page], check=True,
                                 capture_output=True, text=True, timeout=180).stdout
            assert "customersTable" in dom
            shot = tmp_path / "run_mid_run.png"
            subprocess.run([chromium, *flags, f"--screenshot={shot}", page], check=True,
                           capture_output=True, timeout=180)
            assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            shutil.copy(shot, webserver.home.parent / "run_mid_run.png")
    finally:
        webserver.flag.write_text("go")
    deadline = time.monotonic() + 600
    while (status := _run_status(webserver, run_id)) not in ("SUCCESS", "FAILURE", "CANCELED"):
        assert time.monotonic() < deadline, f"run {run_id} still {status}"
        time.sleep(2)
    assert status == "SUCCESS"

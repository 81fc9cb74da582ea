"""engine/settings.py and engine/session.py's choices, without Spark (one
test looks at the shared session): explicit over environment over default,
packages added to Delta's, clear messages for bad values."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest
from splice.engine.session import connect_conf, spark_conf
from splice.engine.settings import SettingsError, SpliceSettings, Warehouse
from splice.resources.spark import SparkResource
from splice.resources.warehouse import WarehouseResource

from splice.cli import main

ENV = {
    "SPLICE_WAREHOUSE": "s3a://bucket/wh",
    "SPLICE_SPARK_MASTER": "spark://env:7077",
    "SPLICE_DRIVER_MEMORY": "8g",
    "SPLICE_SHUFFLE_PARTITIONS": "6",
    "SPLICE_SPARK_PACKAGES": "org.example:env-pkg:1.0",
    "SPLICE_SPARK_CONF": json.dumps({"spark.a": "env", "spark.b": "env"}),
    "SPLICE_SPARK_LOG": "/tmp/env.log",
}


def test_defaults_without_environment() -> None:
    s = SpliceSettings.from_env({})
    assert (s.warehouse, s.master, s.connect_url, s.driver_memory, s.shuffle_partitions,
            s.packages, s.conf) == ("warehouse", "local[2]", None, "4g", 2, (), {})
    assert s.describe_spark() == "local[2]"


def test_environment_over_default() -> None:
    s = SpliceSettings.from_env(ENV)
    assert (s.warehouse, s.master, s.driver_memory, s.shuffle_partitions, s.packages,
            s.conf, s.spark_log) == (
        "s3a://bucket/wh", "spark://env:7077", "8g", 6, ("org.example:env-pkg:1.0",),
        {"spark.a": "env", "spark.b": "env"}, "/tmp/env.log")


def test_explicit_over_environment_and_collections_merge() -> None:
    s = SpliceSettings.from_env(ENV, warehouse="/data/wh", master="local[1]",
                                driver_memory="1g", shuffle_partitions=3,
                                packages=("org.example:mine:2.0", "org.example:env-pkg:1.0"),
                                conf={"spark.b": "mine", "spark.c": "mine"})
    assert (s.warehouse, s.master, s.driver_memory, s.shuffle_partitions) == (
        "/data/wh", "local[1]", "1g", 3)
    # conf merges key by key, the explicit value winning; packages are a union.
    assert s.conf == {"spark.a": "env", "spark.b": "mine", "spark.c": "mine"}
    assert s.packages == ("org.example:env-pkg:1.0", "org.example:mine:2.0")


def test_none_means_not_given() -> None:
    s = SpliceSettings.from_env(ENV, master=None, warehouse=None)
    assert (s.master, s.warehouse) == ("spark://env:7077", "s3a://bucket/wh")


def test_connect_url_from_environment_and_flag() -> None:
    env = {"SPLICE_SPARK_REMOTE": "sc://env:15002"}
    assert SpliceSettings.from_env(env).describe_spark() == "Spark Connect sc://env:15002"
    s = SpliceSettings.from_env(env, connect_url="sc://flag:15002")
    assert s.connect_url == "sc://flag:15002"
    # the older name still works; the issue's name wins when both are set
    assert SpliceSettings.from_env({"SPLICE_SPARK_CONNECT": "sc://old:1"}).connect_url == \
        "sc://old:1"
    assert SpliceSettings.from_env({**env, "SPLICE_SPARK_CONNECT": "sc://old:1"}
                                   ).connect_url == "sc://env:15002"


def test_packages_in_conf_join_delta_instead_of_replacing_it() -> None:
    """A ``spark.jars.packages`` in the conf would replace the coordinate
    Delta's configure_spark_with_delta_pip sets; it becomes packages instead,
    which engine/session.py hands to Delta as extra packages."""
    env = {"SPLICE_SPARK_CONF": json.dumps({"spark.jars.packages": "g:a:1,g:b:2"})}
    s = SpliceSettings.from_env(env, packages=("g:c:3",))
    assert s.packages == ("g:c:3", "g:a:1", "g:b:2")
    assert "spark.jars.packages" not in s.conf
    assert "spark.jars.packages" not in spark_conf(s)


@pytest.mark.spark
def test_the_session_loads_delta_first(spark) -> None:
    conf = spark.sparkContext.getConf()
    packages = conf.get("spark.jars.packages")
    if packages is not None:  # resolved at this start
        assert packages.split(",")[0].startswith("io.delta:delta-spark_")
    else:  # the jars an earlier start resolved, Delta's first after Spark's
        # own on the JVM's classpath (engine/jars.py)
        class_path = spark.sparkContext._jvm.System.getProperty("java.class.path").split(":")
        last_spark = max(i for i, p in enumerate(class_path) if "/pyspark/jars/" in p)
        assert "/io.delta_delta-spark_" in class_path[last_spark + 1]


def test_spark_conf_bad_json_is_one_clear_message() -> None:
    with pytest.raises(SettingsError) as err:
        SpliceSettings.from_env({"SPLICE_SPARK_CONF": "{spark.a: 1"})
    assert str(err.value).startswith("SPLICE_SPARK_CONF is not a JSON object: ")
    assert str(err.value).endswith('write it as {"spark.setting": "value", ...}')
    with pytest.raises(SettingsError) as err:
        SpliceSettings.from_env({"SPLICE_SPARK_CONF": "[1, 2]"})
    assert str(err.value) == "SPLICE_SPARK_CONF must be a JSON object of setting: value, not list"


def test_bad_numbers_and_coordinates_name_the_variable() -> None:
    with pytest.raises(SettingsError) as err:
        SpliceSettings.from_env({"SPLICE_SHUFFLE_PARTITIONS": "two"})
    assert str(err.value) == "SPLICE_SHUFFLE_PARTITIONS must be a whole number above 0, not 'two'"
    with pytest.raises(SettingsError, match="'delta' is not a Maven coordinate"):
        SpliceSettings.from_env({"SPLICE_SPARK_PACKAGES": "delta"})
    with pytest.raises(SettingsError) as err:
        SpliceSettings.from_env({"SPLICE_DRIVER_MEMORY": "lots"})
    assert str(err.value) == ("the driver memory (SPLICE_DRIVER_MEMORY, or driver_memory in "
                              "splice.yaml) must be a size such as 4g or 512m, not 'lots'")
    for size in ("512m", "4G", "2gb", "1073741824"):
        assert SpliceSettings.from_env({"SPLICE_DRIVER_MEMORY": size}).driver_memory == size


def test_bad_maintenance_settings_name_the_variable(monkeypatch) -> None:
    from splice.runtime.maintenance import MaintenancePolicy

    for variable, text, want in (
            ("SPLICE_MAINTAIN_EVERY", "often", "a whole number"),
            ("SPLICE_MAINTAIN_EVERY", "-3", "a whole number"),
            ("SPLICE_RETAIN_HOURS", "a week", "a number"),
            ("SPLICE_LOG_RETAIN_HOURS", "-1", "a number")):
        with monkeypatch.context() as env:
            env.setenv(variable, text)
            with pytest.raises(SettingsError) as err:
                MaintenancePolicy.from_env()
        assert str(err.value) == f"{variable} must be {want}, 0 or more, not {text!r}"
    monkeypatch.setenv("SPLICE_MAINTAIN_EVERY", "0")
    monkeypatch.setenv("SPLICE_RETAIN_HOURS", "200.5")
    policy = MaintenancePolicy.from_env()
    assert (policy.every_runs, policy.retain_hours, policy.log_retain_hours) == (0, 200.5, None)


def test_cli_reports_a_bad_setting_without_a_traceback(tmp_path: Path, monkeypatch,
                                                       capsys) -> None:
    sql = tmp_path / "p.sql"
    sql.write_text("CREATE STREAM e (id INT) WITH (location='e', format='json', key='id');\n"
                   "INSERT INTO out SELECT STREAM e.id FROM e;\n")
    monkeypatch.setenv("SPLICE_SPARK_CONF", "not json")
    assert main(["run", str(sql), "--warehouse", str(tmp_path / "wh")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("splice: SPLICE_SPARK_CONF is not a JSON object: ")
    assert "Traceback" not in err


def test_connect_server_gets_only_session_settings() -> None:
    s = SpliceSettings.from_env({}, connect_url="sc://host:15002",
                                conf={"spark.sql.ansi.enabled": "true",
                                      "spark.executor.memory": "2g"})
    sent, skipped = connect_conf(s)
    assert sent["spark.sql.shuffle.partitions"] == "2"
    assert sent["spark.sql.session.timeZone"] == "UTC"
    assert sent["spark.sql.ansi.enabled"] == "true"
    assert set(skipped) == {
        "spark.cleaner.periodicGC.interval", "spark.databricks.delta.delta.log.cacheSize",
        "spark.default.parallelism", "spark.driver.extraJavaOptions", "spark.driver.memory",
        "spark.executor.extraJavaOptions", "spark.executor.memory",
        "spark.python.sql.dataFrameDebugging.enabled",
        "spark.sql.catalog.spark_catalog", "spark.sql.codegen.cache.maxEntries",
        "spark.sql.extensions", "spark.ui.enabled", "spark.ui.showConsoleProgress"}
    assert not set(skipped) & set(sent)
    # A local Connect URL starts the server here: it gets everything.
    local = SpliceSettings.from_env({}, connect_url="local[1]")
    assert connect_conf(local) == (spark_conf(local), [])


def test_the_projects_connect_server_starts_with_the_users_settings(monkeypatch,
                                                                    tmp_path) -> None:
    """What a client cannot send (read when the JVM starts) reaches the
    server that scripts/connect.sh starts: SPLICE_SPARK_CONF and the S3
    shorthand, over Splice's own settings; the caller's settings over all."""
    from splice.testing.connect_server import _command

    monkeypatch.chdir(tmp_path)  # no splice.yaml
    monkeypatch.setenv("SPLICE_SPARK_CONF", json.dumps({"spark.executor.memory": "3g",
                                                        "spark.sql.shuffle.partitions": "4"}))
    monkeypatch.setenv("SPLICE_S3_ENDPOINT", "http://127.0.0.1:9000")
    args, _ = _command(15002, "2g", {"spark.executor.memory": "5g"})
    conf = dict(args[i + 1].split("=", 1) for i, a in enumerate(args) if a == "--conf")
    assert conf["spark.executor.memory"] == "5g"
    assert conf["spark.sql.shuffle.partitions"] == "4"
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:9000"
    assert conf["spark.driver.memory"] == "2g"
    assert conf["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    assert conf["spark.connect.grpc.binding.port"] == "15002"


def test_spark_resource_fields_win_over_environment(monkeypatch) -> None:
    monkeypatch.setenv("SPLICE_SPARK_MASTER", "spark://env:7077")
    monkeypatch.setenv("SPLICE_DRIVER_MEMORY", "8g")
    assert SparkResource().settings().master == "spark://env:7077"
    s = SparkResource(master="local[1]", conf={"spark.x": "1"}).settings()
    assert (s.master, s.driver_memory, s.conf) == ("local[1]", "8g", {"spark.x": "1"})


def test_warehouse_resource_is_the_engine_layout() -> None:
    resource, plain = WarehouseResource(root="/wh"), Warehouse(root="/wh")
    assert isinstance(resource, Warehouse)
    assert resource.layout() == plain
    for path in (lambda w: w.step_path("p", "s"), lambda w: w.checkpoint_path("p", "s"),
                 lambda w: w.dead_letter_path("p", "src"), lambda w: w.owner_path("p"),
                 lambda w: w.output_claim_path("Out"), lambda w: w.source_path("in"),
                 lambda w: w.output_path("out"), lambda w: w.pipeline_path("p")):
        assert path(resource) == path(plain)
    assert plain.step_path("p", "s") == "/wh/_splice/p/steps/s"
    assert plain.output_claim_path("Out") == "/wh/_splice/output-claims/out.json"
    assert Warehouse(root="s3a://b/wh/").checkpoint_path("p", "s") == \
        "s3a://b/wh/_splice/p/checkpoints/s"
    assert SpliceSettings.from_env({}, warehouse="/wh").warehouse_layout() == plain


def test_connect_without_its_client_libraries_names_the_fix(monkeypatch) -> None:
    """Spark Connect's client needs grpcio-status and friends (pyspark's
    ``connect`` extra). They are pinned, so this branch is reached only by
    hiding grpc_status from the import system (the one stand-in here). In
    a pytest-xdist worker PySpark's own check exits the process (it takes a
    __main__ without a file for a doctest run) where elsewhere it raises:
    both end in this message."""
    from splice.engine.session import start_session

    monkeypatch.setitem(sys.modules, "grpc_status", None)
    with socket.socket() as listening:  # something answers: the server check passes
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        url = f"sc://127.0.0.1:{listening.getsockname()[1]}"
        with pytest.raises(SettingsError) as err:
            start_session(SpliceSettings.from_env({}, connect_url=url))
    text = str(err.value)
    assert text.startswith(f"Spark Connect ({url}) needs PySpark's Connect client "
                           "libraries (grpcio, grpcio-status, googleapis-common-protos, "
                           "pyarrow): ")
    assert "grpc" in text  # the cause, as PySpark or Python words it
    assert text.endswith("Install them with pip install 'pyspark[connect]==4.2.0'")


def test_a_bad_maintenance_setting_stops_a_run_before_it_writes(tmp_path: Path,
                                                                monkeypatch) -> None:
    """Read before the run, not after it: nothing is claimed, locked or run
    (no session is needed to find out)."""
    from splice.engine.io import StepIO
    from splice.runtime.compile import compile_text
    from splice.runtime.runner import run_pipeline

    pipeline = compile_text("CREATE STREAM e (id INT) WITH (location='e', format='json', "
                            "key='id');\nINSERT INTO out SELECT STREAM e.id FROM e;\n",
                            file="p.sql", name="p")
    io = StepIO(spark=None, warehouse=Warehouse(root=str(tmp_path / "wh")), pipeline=pipeline)
    monkeypatch.setenv("SPLICE_MAINTAIN_EVERY", "often")
    with pytest.raises(SettingsError, match="SPLICE_MAINTAIN_EVERY must be a whole number"):
        run_pipeline(pipeline, io)
    assert not (tmp_path / "wh").exists()

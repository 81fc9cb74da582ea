"""The project's settings file (splice.yaml, else pyproject.toml's
[tool.splice]), its place in the precedence, and the same settings read by
the CLI and by the Dagster resources."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from splice.engine.settings import ENV, SettingsError, SpliceSettings
from splice.engine.storage import HADOOP_AWS, fsspec_options, storage_packages
from splice.resources.spark import SparkResource
from splice.resources.warehouse import WarehouseResource

from splice.cli import main
from splice.cli.flags import settings_of
from tests.conftest import ROOT

YAML = """\
warehouse: s3a://bucket/from-file
master: local[1]
driver_memory: 3g
shuffle_partitions: 3
packages: [a:b:1]
conf:
  spark.hadoop.fs.s3a.access.key: file-key
  spark.x: file
s3_endpoint: http://127.0.0.1:9000
"""


def test_precedence_explicit_over_environment_over_file_over_default(tmp_path: Path) -> None:
    (tmp_path / "splice.yaml").write_text(YAML)
    env = {"SPLICE_SPARK_MASTER": "local[4]", "SPLICE_SPARK_CONF": '{"spark.x": "env"}',
           "SPLICE_SPARK_PACKAGES": "c:d:2"}
    s = SpliceSettings.from_env(env, project_dir=tmp_path, driver_memory="5g")
    assert s.warehouse == "s3a://bucket/from-file"  # file over default
    assert s.master == "local[4]"  # environment over file
    assert s.driver_memory == "5g"  # explicit over file
    assert s.shuffle_partitions == 3
    assert s.packages == ("a:b:1", "c:d:2")
    assert s.conf == {"spark.hadoop.fs.s3a.access.key": "file-key", "spark.x": "env"}
    assert s.app_name == "splice"  # the default
    assert s.storage_conf() == {
        "spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9000",
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
        "spark.hadoop.fs.s3a.access.key": "file-key", "spark.x": "env"}


def test_pyproject_tool_splice_is_read_without_a_splice_yaml(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.splice]\nwarehouse = "wh2"\n[tool.splice.conf]\n"spark.y" = 1\n')
    s = SpliceSettings.from_env({}, project_dir=tmp_path)
    assert (s.warehouse, s.conf) == ("wh2", {"spark.y": "1"})
    (tmp_path / "splice.yaml").write_text("warehouse: wh3\n")
    assert SpliceSettings.from_env({}, project_dir=tmp_path).warehouse == "wh3"


def test_an_unknown_setting_in_the_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "splice.yaml").write_text("warehous: x\n")
    with pytest.raises(SettingsError, match=r"splice.yaml: unknown setting\(s\) warehous; "):
        SpliceSettings.from_env({}, project_dir=tmp_path)


ENV_VALUES = {"warehouse": "s3a://b/wh", "master": "spark://h:7077",
              "connect_url": "sc://h:15002", "driver_memory": "3g",
              "shuffle_partitions": "5", "packages": "x:y:1",
              "conf": '{"spark.z": "1"}', "spark_log": "/tmp/x.log",
              "kafka_bootstrap": "h:9092", "s3_endpoint": "http://h:9000",
              "kafka_lost_records": "skip", "processing_guarantee": "at_least_once",
              "schema_registry_url": "http://h:8081/apis/ccompat/v7",
              "schema_registry": '{"ksql.schema.registry.basic.auth.user.info": "u:p"}'}


@pytest.mark.parametrize("name", sorted(ENV))
def test_every_environment_setting_reaches_the_cli_and_dagster_alike(name, monkeypatch) -> None:
    """Each SPLICE_* variable the CLI reads, the Dagster resources read too."""
    for variable in ENV.values():
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv(ENV[name], ENV_VALUES[name])
    cli = settings_of(argparse.Namespace(warehouse=None, master=None, connect=None))
    dagster = SparkResource().settings()
    assert cli == dagster
    assert getattr(cli, name) != getattr(SpliceSettings(), name)  # the variable was read
    assert WarehouseResource.from_settings().root == cli.warehouse


def test_every_spark_resource_field_is_a_setting() -> None:
    """The reverse: what Dagster's resource sets, the settings (and so the
    environment and the settings file) have."""
    fields = set(SparkResource.model_fields) - {"app_name"}
    assert fields <= set(ENV)
    assert set(ENV) - fields == {"warehouse", "packages", "conf"} - fields | {"warehouse"}


def test_s3_locations_add_hadoop_aws_and_s3a_settings_reach_fsspec() -> None:
    assert HADOOP_AWS == "org.apache.hadoop:hadoop-aws:3.5.0"
    jars = {p.name for p in (Path(__import__("pyspark").__file__).parent / "jars").iterdir()}
    assert "hadoop-client-api-3.5.0.jar" in jars  # hadoop-aws matches Spark's Hadoop
    assert storage_packages(["warehouse", "s3a://b/wh"]) == (HADOOP_AWS,)
    assert storage_packages(["warehouse", "file:/x"]) == ()
    a = "spark.hadoop.fs.s3a."
    assert fsspec_options({f"{a}endpoint": "127.0.0.1:9000",
                           f"{a}connection.ssl.enabled": "false",
                           f"{a}access.key": "k", f"{a}secret.key": "s",
                           f"{a}path.style.access": "true"}) == {
        "use_listings_cache": False, "endpoint_url": "http://127.0.0.1:9000",
        "key": "k", "secret": "s", "config_kwargs": {"s3": {"addressing_style": "path"}}}


def test_the_cli_takes_a_folder_of_pipelines(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "pipelines"
    (folder / "one").mkdir(parents=True)
    demo = (ROOT / "pipelines" / "demo")
    for f in demo.glob("*.sql"):
        (folder / "one" / f.name).write_text(f.read_text())
    (folder / "two").mkdir()
    (folder / "two" / "two.sql").write_text(
        "CREATE STREAM a (id INT) WITH (location='a2', key='id');\n"
        "INSERT INTO two_out SELECT STREAM a.id FROM a;\n")
    assert main(["validate", str(folder)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [f"{folder / 'one'}: ok, pipeline 'one' with 7 steps",
                   f"{folder / 'two'}: ok, pipeline 'two' with 2 steps"]
    assert main(["explain", str(folder)]) == 0
    out = capsys.readouterr().out
    assert f"== {folder / 'one'}\npipeline one: 7 steps" in out
    assert f"== {folder / 'two'}\npipeline two: 2 steps" in out
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["run", str(empty)]) == 2
    err = capsys.readouterr().err
    assert err == f"splice: no .sql files in {empty}, nor in a folder under it\n"

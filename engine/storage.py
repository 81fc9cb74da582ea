"""Object storage (S3 and S3-compatible servers) for Spark and for fsspec,
from the one set of settings.

Spark reads ``s3a://`` through Hadoop's S3A file system, which is not in
pyspark's jars: :data:`HADOOP_AWS` (matching pyspark 4.2.0's Hadoop, 3.5.0)
is added to the packages, next to Delta's, when the warehouse or a source
is on ``s3a://``. S3A is configured by ``spark.hadoop.fs.s3a.*`` Spark
settings (``SPLICE_SPARK_CONF`` or ``conf:`` in splice.yaml), and
``s3_endpoint`` (``SPLICE_S3_ENDPOINT``) is a shorthand for the endpoint
plus path-style access, which S3-compatible servers expect.

engine/fs.py (markers, claims, leases, manifests) reads the same storage
through fsspec's s3fs: :func:`fsspec_options` turns those same Spark
settings into s3fs's options, so both see one endpoint and one set of
credentials. Credentials not in the settings come, for both, from AWS's own
chain (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, ~/.aws).

:func:`check_storage` asks the storage before Spark starts, so a missing
endpoint, missing credentials or a missing bucket is one paragraph naming
the setting to fix, not a Java stack trace from the first step.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from splice.engine.settings_error import SettingsError

# org.apache.hadoop:hadoop-client-api in pyspark 4.2.0's jars is 3.5.0.
HADOOP_AWS = "org.apache.hadoop:hadoop-aws:3.5.0"
S3A = "spark.hadoop.fs.s3a."
S3_SCHEMES = ("s3a://", "s3://", "s3n://")


class StorageError(SettingsError):
    """The object storage cannot be used as configured; the message names the
    setting to fix."""


def is_s3(location: str) -> bool:
    return location.startswith(S3_SCHEMES)


def storage_packages(locations: Iterable[str]) -> tuple[str, ...]:
    """The Spark packages the storage of ``locations`` needs."""
    return (HADOOP_AWS,) if any(is_s3(str(loc)) for loc in locations) else ()


def s3a_conf(s3_endpoint: str | None) -> dict[str, str]:
    """The Spark settings the ``s3_endpoint`` shorthand stands for."""
    if not s3_endpoint:
        return {}
    return {f"{S3A}endpoint": s3_endpoint, f"{S3A}path.style.access": "true",
            f"{S3A}connection.ssl.enabled": str(s3_endpoint.startswith("https")).lower()}


def fsspec_options(conf: Mapping[str, str]) -> dict[str, Any]:
    """s3fs's options from S3A's Spark settings (only those S3A was given)."""
    options: dict[str, Any] = {"use_listings_cache": False}
    client: dict[str, Any] = {}
    if conf.get(f"{S3A}endpoint"):
        endpoint = conf[f"{S3A}endpoint"]
        if "://" not in endpoint:
            ssl = conf.get(f"{S3A}connection.ssl.enabled", "true") == "true"
            endpoint = ("https://" if ssl else "http://") + endpoint
        options["endpoint_url"] = endpoint
    if conf.get(f"{S3A}access.key"):
        options["key"] = conf[f"{S3A}access.key"]
    if conf.get(f"{S3A}secret.key"):
        options["secret"] = conf[f"{S3A}secret.key"]
    if conf.get(f"{S3A}session.token"):
        options["token"] = conf[f"{S3A}session.token"]
    if conf.get(f"{S3A}endpoint.region"):
        client["region_name"] = conf[f"{S3A}endpoint.region"]
    if conf.get(f"{S3A}path.style.access") == "true":
        options["config_kwargs"] = {"s3": {"addressing_style": "path"}}
    if client:
        options["client_kwargs"] = client
    return options


def check_storage(location: str, conf: Mapping[str, str], setting: str) -> None:
    """Raise :class:`StorageError` unless the bucket of ``location`` (an
    ``s3a://`` URI; anything else passes) can be listed with ``conf``'s
    endpoint and credentials. ``setting`` names where ``location`` came from."""
    if not is_s3(location):
        return
    import botocore.exceptions as bce
    import s3fs

    bucket = location.split("://", 1)[1].split("/", 1)[0]
    options = fsspec_options(conf)
    endpoint = options.get("endpoint_url")
    where = f"the S3 endpoint {endpoint}" if endpoint else "AWS S3 (no endpoint is set)"
    fix_endpoint = ("set SPLICE_S3_ENDPOINT (or s3_endpoint in splice.yaml, or "
                    f"{S3A}endpoint in SPLICE_SPARK_CONF) to your S3 server's URL")
    fix_keys = (f"set {S3A}access.key and {S3A}secret.key in SPLICE_SPARK_CONF (or conf: in "
                "splice.yaml), or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
    config = {**options.pop("config_kwargs", {}), "connect_timeout": 5, "read_timeout": 10,
              "retries": {"max_attempts": 1}}
    fs = s3fs.S3FileSystem(skip_instance_cache=True, config_kwargs=config, **options)
    try:
        fs.ls(bucket)
    except FileNotFoundError:
        raise StorageError(
            f"{setting} is {location}, but the bucket '{bucket}' does not exist at {where}: "
            f"create the bucket, or fix {setting}") from None
    except bce.NoCredentialsError:
        raise StorageError(
            f"{setting} is {location}, but there are no S3 credentials for {where}: "
            f"{fix_keys}" + ("" if endpoint else f"; for an S3-compatible server, also "
                                                 f"{fix_endpoint}")) from None
    except PermissionError as err:
        raise StorageError(
            f"{setting} is {location}, but {where} refused the credentials for bucket "
            f"'{bucket}' ({err}): {fix_keys}") from None
    except (bce.EndpointConnectionError, bce.ConnectTimeoutError, OSError) as err:
        raise StorageError(
            f"{setting} is {location}, but {where} cannot be reached ({err}): "
            f"{fix_endpoint}") from None

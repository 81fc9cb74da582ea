"""``splice test``: case files (SQL, input rows, expected rows) run against
fresh warehouses, each PASS or FAIL with a row diff."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser("test", help="run case files against fresh warehouses")
    p.add_argument("cases", nargs="+", help="case .yaml files or folders of them")
    p.add_argument("--warehouse", default=None,
                   help="where the cases' warehouses go: <this>/<start time>/<case> (a "
                        "folder or URI, e.g. s3a://bucket/cases; default: temp folders)")
    p.add_argument("--sources", choices=("delta", "kafka", "kafka-in-place"), default="delta",
                   help="where the cases' sources live: Delta tables (as written), or a Kafka "
                        "topic each on SPLICE_KAFKA_BOOTSTRAP, else on scripts/kafka.sh's "
                        "broker (started if needed), the rows produced as records; "
                        "kafka-in-place: every stream topic a step can read in place is read "
                        "so (stored='false')")
    p.add_argument("--value-format", choices=("json", "avro", "json_sr", "protobuf"),
                   default="json",
                   help="with --sources kafka: the records' values, JSON objects (default) "
                        "or the schema registry's AVRO or JSON_SR wire format (each source's "
                        "schema registered at SPLICE_SCHEMA_REGISTRY_URL, else at "
                        "scripts/registry.sh's registry, started if needed)")

    p.set_defaults(handler=run)


def _case_files(paths: list[str]) -> list[Path]:
    files: list[Path] = []
    for p in map(Path, paths):
        files += sorted(p.glob("*.yaml")) if p.is_dir() else [p]
    return files


def run(args: argparse.Namespace) -> int:
    from splice.engine.session import start_session
    from splice.engine.settings import SpliceSettings
    from splice.testing.cases import CaseFileError, load_case, run_case

    if args.value_format == "protobuf":
        print("--value-format protobuf: Splice does not read Protobuf values yet (spark-protobuf "
              "is not available here; docs/decisions/registry-cases.md)", file=sys.stderr)
        return 2
    if args.value_format != "json" and args.sources != "kafka":
        print(f"--value-format {args.value_format} needs --sources kafka (the values are "
              "Kafka records'; kafka-in-place reads JSON values only)", file=sys.stderr)
        return 2
    files = _case_files(args.cases)
    spark = None
    passed = failed = 0
    # one folder per case under a folder of this invocation: never a warehouse
    # an earlier run left there
    root = f"{args.warehouse.rstrip('/')}/{time.strftime('%Y%m%dT%H%M%S')}" \
        if args.warehouse else None
    settings = SpliceSettings.from_env(warehouse=root)
    bootstrap = registry = None
    if args.sources != "delta":
        from splice.physical.sources import KafkaSource
        from splice.testing.kafka_broker import broker_address

        bootstrap = broker_address(settings)
        settings = settings.with_packages(KafkaSource.packages)
    if args.value_format != "json":
        from splice.physical.sources import KafkaSource
        from splice.testing.schema_registry import registry_address

        registry = registry_address(settings)
        settings = settings.with_packages(KafkaSource.avro_packages)
    for file in files:
        try:
            case = load_case(file)
        except CaseFileError as err:  # this file fails; the others still run
            print(f"FAIL {file}\n  {err}", flush=True)
            failed += 1
            continue
        if case.error is None and spark is None:
            spark = start_session(settings)
        result = run_case(case, str(file), spark,
                          workdir=f"{root}/{case.case}" if root else None,
                          sources=_case_sources(bootstrap, args.sources == "kafka-in-place",
                                                registry, args.value_format))
        print(result.render(), flush=True)
        passed, failed = passed + result.passed, failed + (not result.passed)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


def _case_sources(bootstrap: str | None, in_place: bool, registry: str | None = None,
                  value_format: str = "json") -> Any:
    """A case's sources on Kafka topics of ``bootstrap`` (``in_place``: the
    streams a step can read in place read so; ``registry``: the values in
    ``value_format``'s wire format); None: on Delta."""
    if bootstrap is None:
        return None
    from splice.testing.kafka_cases import KafkaCaseSources

    if registry is not None:
        from splice.testing.registry_cases import RegistryCaseSources

        return RegistryCaseSources(bootstrap, registry=registry, value_format=value_format)

    return KafkaCaseSources(bootstrap, in_place=in_place)

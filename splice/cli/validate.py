"""``splice validate``: parse and analyze pipelines; print every error, each
at its file, line and column."""

from __future__ import annotations

import argparse
from typing import Any

from splice.sql.errors import SqlErrors


def add_parser(sub: Any) -> None:
    p = sub.add_parser("validate", help="parse and analyze; print every error")
    p.add_argument("paths", nargs="+", help="a pipeline (a .sql file or a folder of them), "
                                            "or a folder of pipelines")

    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from splice.runtime.compile import compile_path, pipeline_paths

    failed = False
    for path in [p for arg in args.paths for p in pipeline_paths(arg)]:
        try:
            pipeline = compile_path(path)
        except SqlErrors as err:
            failed = True
            for e in err.errors:
                print(e.render())
            continue
        steps = len(pipeline.steps)
        if steps == 0:  # valid, but a user who expected statements should hear it
            print(f"{path}: ok, but pipeline '{pipeline.name}' has no statements: nothing to run")
        else:
            print(f"{path}: ok, pipeline '{pipeline.name}' with {steps} "
                  f"step{'s' if steps > 1 else ''}")
        for source in pipeline.sources.values():
            subject = source.options.get("value_subject")
            if subject:  # columns checked against (or inferred from) the registry
                columns = ", ".join(f"{c.name} {c.type.upper()}" for c in source.declared)
                print(f"  source '{source.name}': {columns}, from subject '{subject}' "
                      f"(schema id {source.options.get('value_schema_resolved')})")
    return 1 if failed else 0

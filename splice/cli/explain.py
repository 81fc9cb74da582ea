"""``splice explain``: each step's physical plan and the step graph."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser("explain", help="the steps, strategies and step graph")
    p.add_argument("path", help="a pipeline, or a folder of pipelines")

    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from splice.physical.explain import explain_pipeline
    from splice.runtime.compile import analyze_path, pipeline_paths

    paths = pipeline_paths(args.path)
    for path in paths:
        if len(paths) > 1:
            print(f"== {path}")
        print(explain_pipeline(analyze_path(path)))
    return 0

"""Flags the commands share: numbers read by the settings' own parser, and
the flags that override the settings' environment variables."""

from __future__ import annotations

import argparse
from typing import Any

from splice.engine.settings import SpliceSettings, parse_number


def flag_number(kind: type[int] | type[float] = float, least: float = 0, above: bool = False,
                 hint: str = "") -> Any:
    """An argparse type: a number read by the settings' own parser, so a
    flag refuses what its setting refuses, at the flag (a negative trigger
    interval was Spark's traceback after starting; --parallel 0 ran)."""
    def parse(text: str) -> Any:
        try:
            return parse_number(text, kind, least, above)
        except ValueError as err:
            raise argparse.ArgumentTypeError(f"{err}{hint}") from None
    return parse


not_negative = flag_number()
above_zero = flag_number(above=True)
at_least_one = flag_number(int, least=1, hint=" (1 runs one step at a time)")


def spark_flags(p: argparse.ArgumentParser) -> None:
    """Flags that override the settings' environment variables
    (engine/settings.py: flag > environment > default)."""
    p.add_argument("--warehouse", default=None,
                   help="the warehouse folder or URI (default SPLICE_WAREHOUSE, else warehouse)")
    p.add_argument("--master", default=None,
                   help="Spark master URL (default SPLICE_SPARK_MASTER, else local[2])")
    p.add_argument("--connect", default=None, metavar="URL",
                   help="a Spark Connect server, sc://host:port (default SPLICE_SPARK_REMOTE; "
                        "overrides --master)")


def settings_of(args: argparse.Namespace) -> SpliceSettings:
    """The settings of a command: its flags, then the environment."""
    return SpliceSettings.from_env(warehouse=getattr(args, "warehouse", None),
                                   master=getattr(args, "master", None),
                                   connect_url=getattr(args, "connect", None))

"""Builds Splice's jar (engine/local_fs.py: the forkless local file system
and the JSON record check):
``python -m splice.local_fs [--force]``, which ``scripts/setup.sh`` runs
before it writes the class-data archive (the jar is on the classpath the
archive records)."""

from __future__ import annotations

import sys

from splice.engine.local_fs import BuildError, build


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        path = build(force="--force" in args)
    except BuildError as err:
        # Not fatal: sessions keep Hadoop's own local file system and check
        # records with Spark's expressions, only slower.
        print(f"Splice's jar: not built ({err}); sessions keep Hadoop's own local file "
              "system and check JSON records with Spark's expressions", file=sys.stderr)
        return 0
    print(f"Splice's jar: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

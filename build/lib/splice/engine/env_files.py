"""Files Splice derives once per virtual environment: the forkless local
file system's jar (engine/local_fs.py), the class-data archive
(engine/class_data.py) and the recorded Spark jars (engine/jars.py).

They live beside the installed packages, under ``<sys.prefix>/var/splice``,
because each fits the PySpark and Delta of that environment: a new
environment starts without them, and each name carries a key of what it
was derived from, so a changed version never meets a stale file.
"""

from __future__ import annotations

import os
import sys


def env_file(name: str) -> str:
    """The path of the environment's file ``name``."""
    return os.path.join(sys.prefix, "var", "splice", name)

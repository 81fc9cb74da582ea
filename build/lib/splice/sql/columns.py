"""The columns every stored row of a step has besides its value columns.

Every step's rows are ``_key``, the value columns in order, then
``ROWTIME`` (the event time). These names are defined here only: the
analyzer writes them into the plan's Spark SQL, the engine and the physical
joins read and write them.
"""

from __future__ import annotations

KEY = "_key"
ROWTIME = "ROWTIME"

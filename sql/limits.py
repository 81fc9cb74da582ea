"""The longest duration Splice compiles: what Spark can hold at run time.

Spark keeps timestamps and day-time intervals as microseconds in a 64-bit
long (at most 2**63 - 1 µs, 106751991 days and 4 hours; Spark's parser
refuses a longer INTERVAL literal), and a step adds a duration to an event
time: a stream-stream join shifts each record's time by its window
(``joins/interval.py``: ``unix_micros(ts) + micros``, which fails
with ARITHMETIC_OVERFLOW past the long), a late match by its retention, a
TUMBLE or HOP window ends at its start plus its size, and a watermark delay
is a CalendarInterval of microseconds. So a duration may be at most what
still fits when added to Spark's latest timestamp, 9999-12-31
23:59:59.999999: 2**63 - 1 - 253402300799999999 µs, 103819094 whole days
(about 284,000 years). A join's window and grace together are held to the
same limit: the join adds ``before + after`` to a time, and Spark's
watermark adds the grace to that. ``tests/sql/test_duration_limits.py``
runs a join at the limit over a record of 9999-12-31.
"""

from __future__ import annotations

_LONG_MAX = 2**63 - 1
_LATEST_TIMESTAMP_MICROS = 253_402_300_799_999_999  # 9999-12-31 23:59:59.999999 UTC
_DAY_MS = 86_400_000

MAX_DURATION_DAYS = (_LONG_MAX - _LATEST_TIMESTAMP_MICROS) // 1000 // _DAY_MS  # 103819094
MAX_DURATION_MS = MAX_DURATION_DAYS * _DAY_MS

LIMIT_TEXT = (f"at most {MAX_DURATION_DAYS} days (about 284,000 years: Spark computes event "
              "times in 64-bit microseconds, and a time up to 9999-12-31 plus the duration "
              "must fit)")
FIX_TEXT = f"use a duration of at most {MAX_DURATION_DAYS} DAYS"


def too_long(millis: int) -> bool:
    """Whether a duration of ``millis`` is longer than Spark can hold."""
    return millis > MAX_DURATION_MS


def too_long_rule(what: str) -> str:
    """The rule broken by ``what`` (a duration as written) being too long."""
    return f"the duration {what} is longer than Spark can hold: {LIMIT_TEXT}"

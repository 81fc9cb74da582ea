"""Who holds a pipeline's lock: the holder a lock file or a lease names
(its own module, so that the lock and the lease both name it and neither
imports the other for it)."""

from __future__ import annotations

import json
import os
import socket
import sys
from dataclasses import asdict, dataclass
from datetime import UTC, datetime


@dataclass(frozen=True)
class Holder:
    """Who holds a pipeline's lock."""

    host: str
    pid: int
    since: str
    command: str

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host} since {self.since} ({self.command})"

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def parse(cls, data: object) -> Holder | None:
        """The holder a lock's content names; None if it names none."""
        try:
            fields = json.loads(data) if isinstance(data, str | bytes) else data
            assert isinstance(fields, dict)
            return cls(str(fields["host"]), int(fields["pid"]), str(fields["since"]),
                       str(fields["command"]))
        except (ValueError, KeyError, TypeError, AssertionError):
            return None


def this_process(owner: str | None = None) -> Holder:
    """This process as a holder; ``owner`` says what it runs (a Dagster run),
    else its command line."""
    command = owner or " ".join([os.path.basename(sys.argv[0] or "python"), *sys.argv[1:]])
    return Holder(socket.gethostname(), os.getpid(),
                  datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), command)

"""A lease on an object store (or any fsspec file system): a lock without a
kernel to free it when its holder dies.

The lease is a folder of generations, ``<n>.json`` (twelve digits), each
naming its holder and an expiry (epoch seconds). The newest generation is
the lease. To take it, one creates generation n+1 *if absent*
(``engine/fs.create_text``: a whole temporary file hard-linked into place
locally, a conditional put, ``If-None-Match``, on S3 through s3fs), which
only one taker can do, and only when generation n is released or expired.
The holder renews its expiry (``engine/fs.write_text``: the file replaced
whole, so a reader never sees it half written) from a background thread
every third of the lease time; a holder that died stops renewing, and once
its expiry passed anyone may take over. Hosts must agree on the time to
within a fraction of the lease (NTP does).

A taker that read an old listing might create a generation below the newest
one; after creating it checks that its generation is the newest, and gives it
up otherwise. The holder removes the generations below its own.

A lease is never lost silently. A renewal that fails (an object store's
outage, a timeout) is tried again with back-off; the holder counts as holding
only until a third of the lease before its last written expiry (its
*deadline*), so that it stops writing while nobody else may take over yet.
Past the deadline without a renewal, or once another holder's generation is
the newest, :meth:`Lease.lost` says why, and ``runtime/tenure.py`` stops the
run before its next write.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from typing import Any

from splice.engine.faults import renewal_fault
from splice.engine.fs import create_text, resolve, write_text
from splice.runtime.holder import Holder

WIDTH = 12
# The first retry of a failed renewal, doubled at each failure after it.
RETRY_SECONDS = 0.25


class Lease:
    def __init__(self, uri: str, seconds: float) -> None:
        self.uri = uri.rstrip("/")
        self.fs, self.folder = resolve(uri)
        self.seconds = seconds
        self._mine: int | None = None
        self._holder: Holder | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._expires = 0.0  # the expiry this holder last wrote
        self._lost: str | None = None  # why it no longer holds the lease
        self._failures = 0  # renewals failed since the last one that went through
        self._renewals = 0  # renewals tried (the injected faults count them)
        self._last_error = ""

    @staticmethod
    def _name(generation: int) -> str:
        return f"{generation:0{WIDTH}d}.json"

    def _path(self, generation: int) -> str:
        """The generation's path in the lease's file system (reads, listings)."""
        return f"{self.folder}/{self._name(generation)}"

    def _uri(self, generation: int) -> str:
        """The generation's URI, for engine/fs's writes, which show a file
        whole or not at all (locally: a hard link or a rename of a
        temporary file; elsewhere one put)."""
        return f"{self.uri}/{self._name(generation)}"

    def _generations(self) -> list[int]:
        try:
            names = self.fs.ls(self.folder, detail=False)
        except FileNotFoundError:
            return []
        stems = (str(n).rstrip("/").rsplit("/", 1)[-1].removesuffix(".json") for n in names)
        return sorted(int(s) for s in stems if s.isdigit() and len(s) == WIDTH)

    def _read(self, generation: int) -> dict[str, Any] | None:
        try:
            with self.fs.open(self._path(generation), "rb") as fh:
                data = json.loads(fh.read())
            return data if isinstance(data, dict) else None
        except (OSError, ValueError):
            return None

    def _live(self, generation: int) -> bool:
        """Whether generation ``generation`` is held: not released, not expired.
        One that cannot be read (being written) counts as held for a lease's
        time from its last change."""
        data = self._read(generation)
        if data is not None:
            return not data.get("released") and float(data.get("expires", 0)) > time.time()
        try:
            changed = self.fs.modified(self._path(generation)).timestamp()
        except (OSError, NotImplementedError):
            return False
        return changed + self.seconds > time.time()

    def _content(self, holder: Holder, expires: float, released: bool = False) -> str:
        return json.dumps({**json.loads(holder.to_json()), "expires": expires,
                           "released": released})

    @property
    def margin(self) -> float:
        """How long before its written expiry a holder stops writing."""
        return self.seconds / 3

    def try_acquire(self, holder: Holder) -> bool:
        generations = self._generations()
        if generations and self._live(generations[-1]):
            return False
        mine = generations[-1] + 1 if generations else 0
        expires = time.time() + self.seconds
        if not create_text(None, self._uri(mine), self._content(holder, expires)):
            return False
        if self._generations()[-1] != mine:  # created below the newest: give it up
            self.fs.rm(self._path(mine))
            return False
        self._mine, self._holder, self._expires = mine, holder, expires
        self._lost, self._failures, self._renewals = None, 0, 0
        for old in (g for g in self._generations() if g < mine):
            with contextlib.suppress(FileNotFoundError):
                self.fs.rm(self._path(old))
        self._stop.clear()
        self._thread = threading.Thread(target=self._renew, name="splice-lease", daemon=True)
        self._thread.start()
        return True

    def _renew(self) -> None:
        """Renew every third of the lease; a failed renewal again after
        RETRY_SECONDS, doubled each time, until the deadline."""
        pause = self.seconds / 3
        while not self._stop.wait(pause):
            if self._mine is None or self._holder is None:
                return
            try:
                self._renew_once(self._mine, self._holder)
            except _Taken as taken:
                self._lost = str(taken)
                return
            except Exception as err:  # an outage of the store: try again soon
                self._failures, self._last_error = self._failures + 1, _one_line(err)
                left = self.deadline() - time.time()
                if left <= 0:  # lost (lost() says why): no renewal may revive it
                    return
                pause = min(RETRY_SECONDS * 2 ** (self._failures - 1), max(left / 2, 0.05))
            else:
                self._failures, pause = 0, self.seconds / 3

    def _renew_once(self, mine: int, holder: Holder) -> None:
        self._renewals += 1
        renewal_fault(self._renewals)
        newest = self._generations()[-1:]
        if newest != [mine]:
            other = Holder.parse(self._read(newest[0])) if newest else None
            raise _Taken("another holder took its lease over"
                         + (f" ({other.describe()})" if other else ""))
        expires = time.time() + self.seconds
        write_text(None, self._uri(mine), self._content(holder, expires))
        self._expires = expires

    def deadline(self) -> float:
        """Until when (epoch seconds) this holder may write: a margin before
        the expiry it last wrote, which nobody may take over before."""
        return self._expires - self.margin

    def lost(self) -> str | None:
        if self._mine is None:
            return None
        if self._lost is not None:
            return self._lost
        if time.time() < self.deadline():
            return None
        expiry = time.strftime("%H:%M:%S", time.gmtime(self._expires))
        if self._failures:
            return (f"its lease could not be renewed before its deadline ({self._failures} "
                    f"tries failed, the last: {self._last_error}; it expires at {expiry} UTC)")
        return f"its lease was not renewed before its deadline (it expires at {expiry} UTC)"

    def holder(self) -> Holder | None:
        generations = self._generations()
        return Holder.parse(self._read(generations[-1])) if generations else None

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._mine is None or self._holder is None:
            return
        try:
            if self._lost is None and self._generations()[-1:] == [self._mine]:
                write_text(None, self._uri(self._mine),
                           self._content(self._holder, 0.0, released=True))
        except Exception:  # the store is out: the lease expires by itself
            pass
        finally:
            self._mine = None


class _Taken(Exception):
    """Another holder's generation is the newest."""


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split()) or type(err).__name__
    return f"{type(err).__name__}: {text[:200]}"

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
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from typing import Any

from engine.fs import create_text, resolve, write_text
from engine.lock import Holder

WIDTH = 12


class Lease:
    def __init__(self, uri: str, seconds: float) -> None:
        self.uri = uri.rstrip("/")
        self.fs, self.folder = resolve(uri)
        self.seconds = seconds
        self._mine: int | None = None
        self._holder: Holder | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.lost = False  # set when someone took over a lease this holder kept

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

    def _content(self, holder: Holder, released: bool = False) -> str:
        expires = 0.0 if released else time.time() + self.seconds
        return json.dumps({**json.loads(holder.to_json()), "expires": expires,
                           "released": released})

    def try_acquire(self, holder: Holder) -> bool:
        generations = self._generations()
        if generations and self._live(generations[-1]):
            return False
        mine = generations[-1] + 1 if generations else 0
        if not create_text(None, self._uri(mine), self._content(holder)):
            return False
        if self._generations()[-1] != mine:  # created below the newest: give it up
            self.fs.rm(self._path(mine))
            return False
        self._mine, self._holder = mine, holder
        for old in (g for g in self._generations() if g < mine):
            with contextlib.suppress(FileNotFoundError):
                self.fs.rm(self._path(old))
        self._stop.clear()
        self._thread = threading.Thread(target=self._renew, name="splice-lease", daemon=True)
        self._thread.start()
        return True

    def _renew(self) -> None:
        while not self._stop.wait(self.seconds / 3):
            if self._mine is None or self._holder is None:
                return
            if self._generations()[-1:] != [self._mine]:
                self.lost = True
                return
            write_text(None, self._uri(self._mine), self._content(self._holder))

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
        if self._generations()[-1:] == [self._mine]:
            write_text(None, self._uri(self._mine), self._content(self._holder, released=True))
        self._mine = None

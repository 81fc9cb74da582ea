"""One spelling per location: the canonical form of a warehouse's root.

A warehouse's root names its lock, its claims and its checkpoints, so two
spellings of one place must give one name, or two runs take two locks on
the same tables (``/x/wh`` took the OS lock and ``file:///x/wh`` a lease:
both runs wrote). :func:`canonical_location` folds every spelling Splice
accepts into one:

- a local folder (a plain path, relative or absolute, ``file:/x``,
  ``file:///x``, ``file://localhost/x``, trailing slashes, ``.``/``..``,
  symbolic links) becomes its real absolute path, without a scheme (so it
  always gets the OS lock, which the kernel frees when its holder dies);
- an object store's URI gets its scheme in lower case, Hadoop's S3 names
  (``s3://``, ``s3n://``) become ``s3a://`` (the one Spark's S3A and
  s3fs both read), the bucket in lower case (bucket names are), and the
  path without repeated or trailing slashes.

The folding is textual for URIs: an object store has no links to follow.
A local root is resolved when it is asked for (a relative folder is taken
against the current directory then, as before).
"""

from __future__ import annotations

import os
import re
from urllib.parse import unquote

# Hadoop's names for S3 that Splice folds into the one Spark's S3A reads.
_S3_ALIASES = ("s3", "s3n", "s3a")


def has_scheme(location: str) -> bool:
    """Whether ``location`` is a URI (``scheme://...`` or ``file:...``)."""
    return "://" in location or location.startswith("file:")


def local_file(location: str) -> str | None:
    """The local path a ``file:`` URI or a plain path names; None for any
    other URI. ``file://localhost/x`` and ``file:///x`` are ``/x``."""
    if location.startswith("file:"):
        rest = location.removeprefix("file:")
        if rest.startswith("//"):
            host, _, path = rest[2:].partition("/")
            if host not in ("", "localhost"):
                return None  # a file URI on another host is not a local path
            rest = "/" + path
        return unquote(rest) or "/"
    return None if "://" in location else location


def canonical_location(location: str) -> str:
    """The one spelling of ``location`` (see the module docstring)."""
    local = local_file(location)
    if local is not None:
        return os.path.realpath(os.path.abspath(os.path.expanduser(local)))
    scheme, _, rest = location.partition("://")
    scheme = scheme.lower()
    if scheme in _S3_ALIASES:
        scheme = "s3a"
    authority, _, path = rest.partition("/")
    if scheme == "s3a":
        authority = authority.lower()
    path = re.sub(r"/{2,}", "/", path).strip("/")
    return f"{scheme}://{authority}/{path}" if path else f"{scheme}://{authority}"

"""What a name may be, where it becomes a path.

Every stream, table, source, output and step name becomes one folder name
(one path segment) in the warehouse (resources/warehouse.py): an output is
``<root>/<output>``, a step ``<root>/_splice/<pipeline>/steps/<step>``, a
source's dead letters ``<root>/_splice/<pipeline>/dead_letter/<source>``. A
name must therefore be one safe path segment, inside the warehouse and out
of Splice's internal folder. A source's ``location`` may be an absolute path
or a URI on purpose; a relative one must stay inside the warehouse.

The rules (docs/decisions/names-and-paths.md):

- not empty, not ``.`` or ``..`` (nor only dots);
- no ``/`` or ``\\`` (a name is one folder, never a path);
- no control character (NUL, U+0001-U+001F, U+007F-U+009F), and none of
  ``: * ? " < > |`` (Windows and HDFS refuse them in a path segment; ``*``
  and ``?`` are also Hadoop glob characters) nor the other glob characters
  ``[ ] { }``;
- not ``_splice`` nor any name starting with it, in any case: that is
  Splice's internal folder;
- at most :data:`MAX_NAME_BYTES` bytes of UTF-8: file systems take 255 bytes
  per segment, and Splice derives step names by adding suffixes
  (``_table``, ``_join``, ``_by_<column>``) and registry files by adding
  ``.json``.

Derived step ids are checked against the segment rules with the file
system's own limit, :data:`MAX_SEGMENT_BYTES`.
"""

from __future__ import annotations

import unicodedata

from splice.sql.errors import Position, SqlError

INTERNAL = "_splice"
MAX_SEGMENT_BYTES = 255  # ext4, XFS, APFS, NTFS (in UTF-16 units, which is less strict)
MAX_NAME_BYTES = 200  # 55 bytes of margin for derived suffixes
FORBIDDEN = set('/\\:*?"<>|[]{}')


def _control(ch: str) -> bool:
    return unicodedata.category(ch) == "Cc"


def segment_problem(name: str, limit: int = MAX_NAME_BYTES,
                    reserved: bool = True) -> tuple[str, str] | None:
    """Why ``name`` cannot be one folder of the warehouse, and how to fix
    it; None when it can. ``reserved=False`` allows names starting with
    ``_splice`` (a pipeline's folder is inside ``_splice`` already)."""
    if not name:
        return "is empty", "give it a name"
    if set(name) == {"."}:
        return ("is only dots, which a file system reads as this or the parent folder",
                "give it a name with letters")
    if "/" in name or "\\" in name:
        return ("holds a path separator ('/' or '\\'): a name is one folder of the "
                "warehouse, never a path", "drop the separators (write a_b, not a/b)")
    bad = next((ch for ch in name if _control(ch)), None)
    if bad is not None:
        return f"holds the control character U+{ord(bad):04X}", "remove it"
    bad = next((ch for ch in name if ch in FORBIDDEN), None)
    if bad is not None:
        return (f"holds '{bad}', which file systems or Hadoop refuse in a folder name",
                "use letters, digits, '_', '-' or '.' instead of "
                + " ".join(sorted(FORBIDDEN - {"/", "\\"})))
    if reserved and name.lower().startswith(INTERNAL):
        return (f"starts with '{INTERNAL}', the name of Splice's internal folder",
                f"rename it: names starting with {INTERNAL} are reserved")
    size = len(name.encode("utf-8"))
    if size > limit:
        return (f"is {size} bytes long in UTF-8, over the limit of {limit}",
                f"shorten it to at most {limit} bytes")
    return None


def _show(name: str, width: int = 40) -> str:
    shown = name if len(name) <= width else name[:width] + "..."
    return repr(shown)


def check_name(name: str, position: Position, what: str = "name") -> None:
    """Raise a positioned :class:`SqlError` when ``name`` cannot be a folder
    of the warehouse."""
    problem = segment_problem(name)
    if problem is not None:
        rule, fix = problem
        raise SqlError(position, f"the {what} {_show(name)} {rule}", fix)


def check_step_id(step_id: str, position: Position) -> None:
    """Raise when a step id the analyzer derived (``<name>_by_<column>``)
    cannot be a folder: only long or odd column names make one."""
    problem = segment_problem(step_id, MAX_SEGMENT_BYTES)
    if problem is not None:
        raise SqlError(position, f"the derived step name {_show(step_id)} {problem[0]}",
                       "shorten or rename the step and the columns it is keyed by")


def is_absolute(location: str) -> bool:
    """An absolute path or a URI: data that lives elsewhere, on purpose (the
    same test as resources/warehouse.py, plus a leading slash)."""
    return "://" in location or location.startswith(("file:", "/"))


def location_problem(location: str) -> str | None:
    """Why a source ``location`` cannot be read, or None. Absolute paths and
    URIs are taken as they are (but no control characters); a relative one
    must name a folder inside the warehouse and outside ``_splice``."""
    bad = next((ch for ch in location if _control(ch)), None)
    if bad is not None:
        return f"holds the control character U+{ord(bad):04X}"
    if is_absolute(location):
        return None
    parts: list[str] = []
    for segment in location.replace("\\", "/").split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if not parts:
                return "climbs out of the warehouse with '..'"
            parts.pop()
            continue
        if len(segment.encode("utf-8")) > MAX_SEGMENT_BYTES:
            return f"has a folder name over {MAX_SEGMENT_BYTES} bytes"
        parts.append(segment)
    if not parts:
        return "is the warehouse itself, not a folder in it"
    if parts[0].lower().startswith(INTERNAL):
        return f"points into '{INTERNAL}', Splice's internal folder"
    return None


def check_location(location: str, position: Position) -> None:
    problem = location_problem(location)
    if problem is not None:
        raise SqlError(position, f"the location {_show(location)} {problem}",
                       "give a folder inside the warehouse (a relative path without '..' "
                       f"or {INTERNAL}), or an absolute path or URI for data kept elsewhere")

"""Positioned, user-facing errors.

Every rejection of a statement is a :class:`SqlError`: the file, line and
column, the rule that was broken in plain words, and a way forward. The CLI
prints them as ``file:line:col: rule; how to fix`` and no Python traceback
reaches the user for a mistake in SQL.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Position:
    """A place in a SQL file; line and column are 1-based.

    The one position type: errors carry it, and so does every plan step
    (``StepBase.where``, where its statement starts), serialized as
    ``{"file", "line", "col"}``."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


@dataclass
class SqlError(Exception):
    """One rejection: where, which rule, and how to fix it."""

    position: Position
    rule: str
    fix: str
    extra: list[SqlError] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(self.render())

    def render(self) -> str:
        return f"{self.position}: {self.rule}; {self.fix}"

    def all(self) -> list[SqlError]:
        """This error and every further one found in the same pass."""
        return [self, *self.extra]

    def __str__(self) -> str:
        return "\n".join(e.render() for e in self.all())


class SqlErrors(Exception):
    """Several independent rejections found in one pass over a pipeline."""

    def __init__(self, errors: list[SqlError]) -> None:
        self.errors = errors
        super().__init__("\n".join(e.render() for e in errors))


def position_in(text: str, offset: int, file: str) -> Position:
    """The 1-based line and column of character ``offset`` of ``text``."""
    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset) + 1
    line_start = text.rfind("\n", 0, offset) + 1
    return Position(file=file, line=line, col=offset - line_start + 1)

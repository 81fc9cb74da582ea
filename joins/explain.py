"""Plan trees in the manner of RisingWave's EXPLAIN."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ExplainNode(BaseModel):
    """One operator: its name, its properties, its inputs."""

    model_config = ConfigDict(frozen=True)

    name: str
    props: dict[str, str] = {}
    children: tuple[ExplainNode, ...] = ()

    def render(self) -> str:
        return "\n".join(self._lines("", ""))

    def _lines(self, first: str, rest: str) -> list[str]:
        props = ", ".join(f"{k}: {v}" for k, v in self.props.items() if v)
        head = f"{first}{self.name}" + (f" {{ {props} }}" if props else "")
        lines = [head]
        for i, child in enumerate(self.children):
            last = i == len(self.children) - 1
            lines += child._lines(rest + ("└─" if last else "├─"),
                                  rest + ("  " if last else "│ "))
        return lines


def duration(ms: int) -> str:
    """Milliseconds in words, for EXPLAIN."""
    for unit, size in (("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms and ms % size == 0:
            return f"{ms // size} {unit}"
    return f"{ms} ms"

"""The physical join nodes: which variant runs a join step, what it reads,
its EXPLAIN tree. Pure (no Spark); their executors are ``joins/*``.
"""

from __future__ import annotations

from typing import ClassVar

from splice.physical.base import ExplainNode, PhysicalNode, Reads, duration
from splice.physical.strategy import Strategy, choose_strategy
from splice.sql.plan import AsofInequality, JoinStep, JoinType, Kind, Step, Window

# The table-table join's plan choice (splice.joins.table_plan), shown by EXPLAIN:
# Distinct changed join values / input rows from which a recompute is
# chosen, when it overwrites the result (no step reads its change feed):
# bench/table_plan_bench.py measured the overwrite cheaper from 0.125% of
# the input rows up (1M and 4M keys a side; bench/RESULTS.md).
RECOMPUTE_FRACTION = 0.001
# ... and when it MERGEs the rows that differ (a step reads the change
# feed): it then does the incremental plan's MERGE plus a whole join and a
# comparison with the stored result, which pays only when the change is
# about the whole input (a first run's share is 50% for a key join).
RECOMPUTE_FRACTION_WHEN_READ = 0.25
# ... and, when no step reads the result, from this expected share of the
# result's files rewritten by the incremental plan's MERGE.
REWRITE_SHARE = 0.5

_SKIPS = "records whose value columns are all NULL"


class JoinNode(PhysicalNode):
    """A join step and the variant that computes it."""

    plans: ClassVar[type[Step]] = JoinStep
    strategy: ClassVar[Strategy]
    step: JoinStep

    @classmethod
    def takes(cls, step: Step) -> bool:
        return isinstance(step, JoinStep) and choose_strategy(step) == cls.strategy

    def explain(self) -> ExplainNode:
        tree = self.tree()
        return tree.model_copy(update={"props": {
            "strategy": self.strategy.value, **self.header(), **tree.props}})

    def tree(self) -> ExplainNode:
        """The variant's own tree (``explain`` adds the strategy and the
        step's kind and key in front of its properties)."""
        raise NotImplementedError

    def reads(self) -> Reads:
        """Both inputs' new rows make a join emit, unless the variant says
        otherwise."""
        return Reads(streamed=self.step.inputs)

    def input_of(self, side: str) -> str:
        return self.step.inputs[0 if side == "l" else 1]

    def filter_of(self, side: str) -> str | None:
        return self.step.left_filter if side == "l" else self.step.right_filter

    def equality_sql(self) -> list[str]:
        return [f"({e.left}) = ({e.right})" for e in self.step.equalities]

    def common_props(self) -> dict[str, str]:
        s = self.step
        return {
            "type": s.join_type.value,
            "predicate": " AND ".join(e.text for e in s.equalities),
            "residual": s.residual or "",
            "after join": s.post_filter or "",
            "key": s.key,
            "rowtime": s.rowtime,
            "output": "[" + ", ".join(p.name for p in s.select) + "]",
        }


class StreamTableLookup(JoinNode):
    """Each stream record looks the table up as it stands
    (``joins/lookup.py``)."""

    kind: ClassVar[str] = "join.lookup"
    strategy: ClassVar[Strategy] = Strategy.STREAM_TABLE_LOOKUP

    @property
    def stream_side(self) -> str:
        return "l" if self.step.left_kind == Kind.STREAM else "r"

    @property
    def table_side(self) -> str:
        return "r" if self.stream_side == "l" else "l"

    @property
    def how(self) -> str:
        outer = {JoinType.LEFT, JoinType.RIGHT}
        return "left" if self.step.join_type in outer else "inner"

    def streams_in_place(self, input_id: str) -> bool:
        """Its stream side, unless a table change matches late stream rows
        (which it then reads from the stream side's table)."""
        return (input_id == self.input_of(self.stream_side)
                and self.step.late_match_retention_ms is None)

    def reads(self) -> Reads:
        table = self.input_of(self.table_side)
        if self.step.late_match_retention_ms is not None:  # a table change can emit
            return Reads(streamed=self.step.inputs, looked_up=(table,))
        return Reads(streamed=(self.input_of(self.stream_side),), looked_up=(table,))

    def tree(self) -> ExplainNode:
        s, t = self.stream_side, self.table_side
        return ExplainNode(
            name="StreamTableLookupJoin",
            props={**self.common_props(),
                   "stream": f"{s} = {self.input_of(s)}",
                   "table": f"{t} = {self.input_of(t)} (read afresh every micro-batch)",
                   "emits": self._emits()},
            children=(
                ExplainNode(name="StreamScan", props={
                    "step": self.input_of(s), "filter": self.filter_of(s) or "",
                    "skips": _SKIPS}),
                ExplainNode(name="TableSnapshot", props={
                    "step": self.input_of(t), "filter": self.filter_of(t) or ""}),
            ),
        )

    def _emits(self) -> str:
        retention = self.step.late_match_retention_ms
        if retention is None:
            return "on stream records only; table changes do not re-emit"
        return ("on stream records; a record without a table row is kept for "
                f"{duration(retention)} of event time (join.late.match.retention) and "
                "joined once when its table row arrives")


class IntervalJoin(JoinNode):
    """Spark's symmetric hash join over an event-time window
    (``joins/interval.py``)."""

    kind: ClassVar[str] = "join.interval"
    strategy: ClassVar[Strategy] = Strategy.INTERVAL

    def streams_in_place(self, input_id: str) -> bool:
        """Both sides: each is streamed once, in no order."""
        return input_id in self.step.inputs

    @property
    def window(self) -> Window:
        assert self.step.window is not None
        return self.step.window

    @property
    def constant_key(self) -> bool:
        """Spark refuses a stream-stream join without an equality: a join with
        none (CROSS, or only a residual) joins on a constant instead."""
        return not self.step.equalities

    def open_ms(self, side: str) -> int:
        """How long past its own time a record can still be matched."""
        return self.window.after_ms if side == "l" else self.window.before_ms

    @property
    def rowtime_in_state(self) -> bool:
        """Whether the join condition reads ROWTIME itself. If not, the state
        keeps only the two shifted copies of it, and ROWTIME is recomputed
        from the watermark column after the join: one column less per state
        row."""
        text = " ".join([*self.equality_sql(), self.step.residual or ""]).lower()
        return "rowtime" in text

    def tree(self) -> ExplainNode:
        w, s = self.window, self.step
        outer = {JoinType.LEFT: "left", JoinType.RIGHT: "right",
                 JoinType.FULL: "left and right"}.get(s.join_type)
        props = {
            **self.common_props(),
            "window": f"-{duration(w.before_ms)} <= r.ROWTIME - l.ROWTIME <= "
                      f"{duration(w.after_ms)} ({w.form})",
            "grace": duration(w.grace_ms),
            "stream time": "the largest ROWTIME seen on either input",
            "state": f"a left record until stream time >= its ROWTIME + "
                     f"{duration(w.after_ms + w.grace_ms)}, a right record until >= its "
                     f"ROWTIME + {duration(w.before_ms + w.grace_ms)}",
            "emits": "a match as soon as both records are processed"
                     + (f"; an unmatched {outer} record null-padded when its window closes"
                        if outer else ""),
            "late": "a record whose window has closed when it arrives is dropped and counted",
            "rowtime": s.rowtime,
        }
        if self.constant_key:
            props["partitioning"] = (
                "none: no equality, so both inputs join on a constant key; every row of "
                "the window is kept and matched on one partition (one core), and each "
                "record is compared with every open record of the other input")
        return ExplainNode(
            name="IntervalJoin",
            props=props,
            children=tuple(
                ExplainNode(name="StreamScan", props={
                    "step": s.inputs[i],
                    "filter": self.filter_of(side) or "",
                    "skips": _SKIPS,
                    "watermark": f"ROWTIME + {duration(open_ms)}, delay "
                                 f"{duration(open_ms + w.grace_ms)}"})
                for i, (side, open_ms) in enumerate(
                    (("l", w.after_ms), ("r", w.before_ms)))),
        )


class IncrementalTableJoin(JoinNode):
    """Two tables, maintained incrementally from their change feeds
    (``joins/table_table.py``)."""

    kind: ClassVar[str] = "join.table_table"
    strategy: ClassVar[Strategy] = Strategy.TABLE_TABLE

    def tree(self) -> ExplainNode:
        s = self.step
        if s.equalities:
            plan = ("chosen per run (joins/table_plan.py): incremental, unless the "
                    f"changed join values reach {RECOMPUTE_FRACTION:.1%} of the input rows "
                    f"({RECOMPUTE_FRACTION_WHEN_READ:.0%} when a step reads the result's "
                    "changes), or, when none does, its MERGE would rewrite "
                    f"{REWRITE_SHARE:.0%} of the result's files; then a recompute)")
        else:
            plan = "recompute on every change (no equality: a change touches every row)"
        return ExplainNode(
            name="IncrementalTableJoin",
            props={**self.common_props(), "result key": s.key_mode or "",
                   "plan": plan,
                   "incremental": "the result rows of the changed join values, recomputed; "
                                  "one MERGE of those, DELETE of stale ones",
                   "recompute": "the whole join; an overwrite of the result, or a MERGE of "
                                "the rows that differ when a step reads its change feed"},
            children=(
                ExplainNode(name="ChangeFeed", props={"step": s.inputs[0],
                                                      "filter": s.left_filter or ""}),
                ExplainNode(name="ChangeFeed", props={"step": s.inputs[1],
                                                      "filter": s.right_filter or ""}),
            ),
        )


class AsofJoin(JoinNode):
    """ASOF joins, maintained as a table keyed by the left row's key
    (``joins/asof.py``)."""

    kind: ClassVar[str] = "join.asof"
    strategy: ClassVar[Strategy] = Strategy.ASOF

    @property
    def inequality(self) -> AsofInequality:
        assert self.step.asof is not None, "an AsofJoin needs an ASOF step"
        return self.step.asof

    def kind_of(self, side: str) -> Kind:
        return self.step.left_kind if side == "l" else self.step.right_kind

    def reads(self) -> Reads:
        """Stream inputs are kept in an arrival log: whatever feeds them is
        read in arrival order too."""
        return Reads(streamed=self.step.inputs, in_order=self.step.inputs)

    def tree(self) -> ExplainNode:
        s = self.step
        return ExplainNode(
            name="AsofJoin",
            props={**self.common_props(), "type": f"ASOF {s.join_type.value}",
                   "inequality": self.inequality.describe(),
                   "ties": "smallest r._key (NULL last), then the latest to arrive",
                   "result key": "the left row's _key",
                   "maintained by": "MERGE of recomputed left rows, DELETE of those gone",
                   "incremental": "a new or changed row recomputes the left rows of its "
                                  "equality values, from the stored rows of those values"},
            children=tuple(self._explain_input(side) for side in ("l", "r")),
        )

    def _explain_input(self, side: str) -> ExplainNode:
        step_id = self.input_of(side)
        if self.kind_of(side) == Kind.TABLE:
            return ExplainNode(name="ChangeFeed", props={
                "step": step_id, "filter": self.filter_of(side) or "",
                "reads": "its current rows of the affected values"})
        reads = ("the latest record per key, of the affected values" if side == "l"
                 else "every row of the affected values")
        return ExplainNode(name="StreamScan", props={
            "step": step_id, "filter": self.filter_of(side) or "",
            "skips": _SKIPS,
            "kept": "in an arrival log (one input file per micro-batch)", "reads": reads})


class UnsupportedJoin(JoinNode):
    """A join whose strategy Splice cannot run yet: EXPLAIN shows it (of a
    pipeline analyzed, not compiled); no executor runs it, and compiling it
    is a positioned error (``splice.physical.planner``)."""

    kind: ClassVar[str] = "join.unsupported"
    reason: str

    @classmethod
    def takes(cls, step: Step) -> bool:
        return False  # the planner makes it, for EXPLAIN only

    def explain(self) -> ExplainNode:
        s = self.step
        return ExplainNode(name="Join", props={
            "strategy": choose_strategy(s).value, **self.header(), "type": s.join_type.value,
            "predicate": " AND ".join(e.text for e in s.equalities),
            "left filter": s.left_filter or "", "right filter": s.right_filter or "",
            "residual": s.residual or "", "after join": s.post_filter or "",
            "window": s.window.describe() if s.window else "",
            "key": s.key, "rowtime": s.rowtime,
            "output": "[" + ", ".join(p.name for p in s.select) + "]",
            "note": f"not runnable yet: {self.reason}"},
            children=(ExplainNode(name=f"Input l: {s.inputs[0]}"),
                      ExplainNode(name=f"Input r: {s.inputs[1]}")))

"""What the asset specs say beyond the graph: each column's lineage (a
join's columns from its two sides), and freshness from the translator."""

from __future__ import annotations

from datetime import timedelta

import pytest
from dagster import FreshnessPolicy
from splice.orchestration.assets import build_assets
from splice.orchestration.translator import SpliceTranslator
from splice.runtime.compile import compile_path

from tests.conftest import ROOT


def _specs(hide: bool = False, translator: SpliceTranslator | None = None) -> dict:
    assets = build_assets(compile_path(ROOT / "pipelines" / "demo"), translator, hide)
    return {s.key.to_user_string(): s for a in assets for s in a.specs}


def _lineage(spec) -> dict[str, set[tuple[str, str]]]:
    lineage = spec.metadata["dagster/column_lineage"]
    return {column: {(d.asset_key.to_user_string(), d.column_name) for d in deps}
            for column, deps in lineage.deps_by_column.items()}


def test_a_joins_columns_come_from_its_two_sides() -> None:
    specs = _specs()
    assert _lineage(specs["demo/orders_enriched"]) == {
        "name": {("demo/customersTable", "name")},
        "item": {("demo/ordersStream_by_customer_id", "item")},
        "_key": {("demo/ordersStream_by_customer_id", "customer_id"),
                 ("demo/customersTable", "id")},
        "ROWTIME": {("demo/ordersStream_by_customer_id", "ROWTIME")}}
    # a projection from its input, a repartition keyed by the column it moves by
    assert _lineage(specs["demo/ordersStream"])["item"] == {("demo/orders", "item")}
    assert _lineage(specs["demo/ordersStream_by_customer_id"])["_key"] == {
        ("demo/ordersStream", "customer_id")}
    assert "dagster/column_lineage" not in specs["demo/orders"].metadata  # a source


def test_lineage_names_only_assets_when_steps_are_hidden() -> None:
    """Hidden steps are no assets: lineage leaves them out rather than name
    a key nothing shows."""
    specs = _specs(hide=True)
    assert "dagster/column_lineage" not in specs["demo/orders_enriched"].metadata
    assert set(specs) == {"demo/customers", "demo/orders", "demo/orders_enriched",
                          "demo/orders_matched"}


def test_freshness_comes_from_the_translator(monkeypatch) -> None:
    monkeypatch.delenv("SPLICE_FRESHNESS_MINUTES", raising=False)
    assert {s.freshness_policy for s in _specs().values()} == {None}
    monkeypatch.setenv("SPLICE_FRESHNESS_MINUTES", "30")
    specs = _specs()
    expected = FreshnessPolicy.time_window(fail_window=timedelta(minutes=30),
                                           warn_window=timedelta(minutes=15))
    assert specs["demo/orders_enriched"].freshness_policy == expected
    assert specs["demo/customersTable"].freshness_policy is None  # outputs only
    monkeypatch.setenv("SPLICE_FRESHNESS_MINUTES", "soon")
    with pytest.raises(ValueError, match="SPLICE_FRESHNESS_MINUTES is a number of minutes"):
        _specs()

    class Hourly(SpliceTranslator):
        def get_freshness_policy(self, step, pipeline):
            return FreshnessPolicy.time_window(fail_window=timedelta(hours=1))

    monkeypatch.delenv("SPLICE_FRESHNESS_MINUTES")
    assert _specs(translator=Hourly())["demo/orders"].freshness_policy == \
        FreshnessPolicy.time_window(fail_window=timedelta(hours=1))

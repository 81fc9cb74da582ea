"""Each step's session of its own (engine.session.own_session) gets
Splice's settings that are set on the caller's session, and nothing else
of that session's settings."""

from __future__ import annotations

from typing import Any

import pytest
from splice.engine.session import own_session
from splice.engine.settings import (
    FRACTION_SETTING,
    PLAN_SETTING,
    READ_FRACTION_SETTING,
    SESSION_SETTINGS,
    STREAM_START_SETTING,
)

pytestmark = pytest.mark.spark


def test_splices_settings_that_are_set_are_carried_and_no_other(spark: Any) -> None:
    assert set(SESSION_SETTINGS) == {PLAN_SETTING, FRACTION_SETTING, READ_FRACTION_SETTING,
                                     STREAM_START_SETTING}
    plan = spark.conf.get(PLAN_SETTING, None)
    assert plan == "incremental"  # the suite's (tests/conftest.py)
    partitions = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set(FRACTION_SETTING, "0.5")
    spark.conf.set(STREAM_START_SETTING, "false")
    spark.conf.set("spark.sql.shuffle.partitions", "7")
    try:
        session = own_session(spark)
        assert {name: session.conf.get(name, None) for name in SESSION_SETTINGS} == {
            PLAN_SETTING: plan, FRACTION_SETTING: "0.5",
            READ_FRACTION_SETTING: None, STREAM_START_SETTING: "false"}
        assert session.conf.get("spark.sql.shuffle.partitions") == partitions != "7"
        spark.conf.set(FRACTION_SETTING, "0.25")  # the two sessions' settings are apart
        assert session.conf.get(FRACTION_SETTING) == "0.5"
    finally:
        for name in (FRACTION_SETTING, STREAM_START_SETTING):
            spark.conf.unset(name)
        spark.conf.set("spark.sql.shuffle.partitions", partitions)

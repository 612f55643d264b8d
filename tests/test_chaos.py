"""A short chaos run (bench.chaos --quick, shortened): workers SIGKILLed, Redis flushed and restarted.

Asserts the promises only; the repair-time figure is reported by `python -m bench.chaos`, not asserted.
"""

from __future__ import annotations

import os

import pytest

from bench import chaos

pytestmark = pytest.mark.integration


def test_no_tick_twice_no_chain_lost_counters_true_under_faults():
    database = "postgres" if os.environ.get("RECUR_TEST_POSTGRES") else "sqlite"
    report = chaos.run(schedules=30, duration=20.0, db_kind=database, seed=7, reconcile_seconds=2.0,
                       worker_mode="forking")
    assert report["faults"]["kill -9 worker"] >= 2 and report["faults"]["FLUSHALL"] == 1
    assert report["runs_by_status"].get("succeeded", 0) > 30
    assert report["duplicate_ticks"] == 0, report["examples"]
    assert report["stalled_active_schedules"] == 0, report["examples"]
    assert report["counter_mismatches"] == 0, report["examples"]

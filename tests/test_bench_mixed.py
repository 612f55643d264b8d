"""`python -m bench --quick --only mixed` end to end on the pass's database: quick schedules alone and beside slow
ones on one worker.py with several slot counts, the slow workflow PATCHed onto a queue of its own with its own
worker, and throughput with N slots beside rq worker-pool. Speed is never asserted here (shared machines make it
noise): every figure must be there, every quick tick run where the slots or the queues leave room, and, with
fewer slots than slow tasks, quick ticks waiting behind them (slow tasks of a second or more hold every slot:
a lower bound a slower machine only raises); and the default worker (the Procfile's) beside one slow task
fewer than its slots."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.quick_bench import run_quick_bench

pytestmark = [pytest.mark.bench, pytest.mark.database]


def test_quick_mixed_scenario_produces_every_figure(tmp_path: Path) -> None:
    database, document, _ = run_quick_bench(tmp_path, "--only", "mixed")
    spec = document["config"]["mixed"]
    mixed = document["results"][database]["mixed"]
    loads = mixed["loads"]
    assert not [entry for entry in loads.values() if "error" in entry], loads
    # the own queue's rows (with and without slow tasks) and few slow tasks'
    assert len(loads) == len(spec["baseline"]) + len(spec["mixed"]) + 3
    few = loads["few slow x default"]
    assert few["slow_count"] == few["concurrency"] - 1 and few["concurrency"] >= 4, few  # the default worker
    for key, entry in loads.items():
        quick = entry["quick"]
        assert quick["fires"] > 0 and quick["early"] == 0, (key, entry)
        roomy = entry["own_queue"] or not entry["slow"] or entry["concurrency"] > entry["slow_count"]
        if roomy:  # every quick tick in the window ran, none given up
            assert quick["fires"] == quick["due"] and quick["missed"] == 0, (key, entry)
        if entry["slow"]:
            assert entry["slow_runs"]["fires"] > 0, (key, entry)
        assert all(memory["pss_mb"] > 0 for memory in entry["memory"].values()), (key, entry)
    crowded = sorted((entry for entry in loads.values() if entry["slow"] and not entry["own_queue"]
                      and entry["concurrency"] < entry["slow_count"]), key=lambda entry: entry["concurrency"])
    assert crowded and crowded[0]["quick"]["max_ms"] >= 500, crowded
    for key in ("own queue", "own queue alone"):
        own = loads[key]
        assert set(own["memory"]) == {"slow", "quick"} and own["own_queue"] == spec["own_queue"], own
    assert "slow_runs" not in loads["own queue alone"]
    judged = [row for row in document["rows"] if row["target"] == "ratio <= 1.2"]
    assert [row["baseline"] for row in judged] == [
        f"p99 of the quick load alone, the same two workers (x{own['concurrency']}, idle x{spec['own_queue']})"], judged
    for slots in spec["throughput_slots"]:
        entry = mixed["throughput"][f"x{slots}"]
        assert entry["recur"]["fires"] == spec["throughput_count"], entry
        assert entry["rq_pool"]["jobs"] == entry["rq_pool_simple"]["jobs"] == spec["throughput_count"], entry
    rows = [row for row in document["rows"] if row["database"] == database]
    assert {row["scenario"] for row in rows} == {"9 mixed"}
    missing = [row for row in rows
               if not isinstance(row["recur"], int | float) or not isinstance(row["baseline_value"], int | float)]
    assert not missing, missing
    assert all(row["pass"] is not None for row in rows if row["target"]), rows
    # the targets: quick p99 with more slots than slow tasks, and with the slow workflow on its own queue
    assert {row["target"] for row in rows if row["target"]} == {"<= 100 ms", "ratio <= 1.2", "== due"}

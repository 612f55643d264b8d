"""`python -m bench --quick --only history` end to end on the pass's database: a history inserted in bulk, every
request timed against both histories through gunicorn, a link's CPU beside an empty database, and pruning under
load until it has caught up. Speed is never asserted here (shared machines make it noise): every figure must be
there, and the pruner must have deleted what was past retention when it began."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.quick_bench import run_quick_bench

pytestmark = [pytest.mark.bench, pytest.mark.database]

ENDPOINTS = {"schedule_get", "runs_first_page", "runs_deep_page", "schedules_list", "console_schedule",
             "console_schedules", "metrics", "health"}


def test_quick_history_scenario_produces_every_figure(tmp_path: Path) -> None:
    database, document, _ = run_quick_bench(tmp_path, "--only", "history")
    history = document["results"][database]["history"]
    assert "error" not in history, history
    assert history["runs"] == document["config"]["history"]["runs"]
    assert set(history["requests"]) == ENDPOINTS
    prune = history["prune"]
    assert prune["caught_up"] and prune["pruned"] >= prune["expected"] > history["runs"] / 2, prune
    assert prune["lateness_while_pruning"]["fires"] > 0 and prune["lateness_after"]["fires"] > 0, prune
    rows = [row for row in document["rows"] if row["scenario"] == "8 history"]
    assert {row["scenario"] for row in document["rows"]} == {"8 history"}
    assert len([row for row in rows if row["target"]]) == 2 * len(ENDPOINTS) + 3
    missing = [row for row in rows
               if not isinstance(row["recur"], int | float) or not isinstance(row["baseline_value"], int | float)]
    assert not missing, missing
    assert all(row["pass"] is not None for row in rows if row["target"]), rows

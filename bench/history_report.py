"""Scenario 8's table lines: each request with the big history beside the same request with the small one, a
link's CPU beside an empty database, and pruning (bench/targets.py holds the limits)."""

from __future__ import annotations

from typing import Any

from bench.report import on_database, row
from bench.targets import HISTORY_GROWTH_SHARE, HISTORY_LINK_CPU, HISTORY_PRUNING_P99_MS, HISTORY_REQUEST, at_most

Row = dict[str, Any]
SCENARIO = "8 history"


def history_rows(history: Any, database: str) -> list[Row]:
    return on_database(_rows(history) if history else [], database)


def _rows(history: dict[str, Any]) -> list[Row]:
    if "error" in history:
        return row(SCENARIO, "the scenario", "", None, [("error", history["error"])], "completes", False)
    rows: list[Row] = []
    behind = f"{history['big']:,} runs behind it, {history['runs']:,} in all"
    small = f"{history['small']:,} runs in all"
    for figures in history["requests"].values():
        for pct in ("p50_ms", "p99_ms"):
            value, baseline = figures["big"][pct], figures["small"][pct]
            rows += row(SCENARIO, f"{figures['label']} {pct[:3]} ({behind})", "ms", value, [(small, baseline)],
                        f"ratio <= {HISTORY_REQUEST:g}", at_most(value, baseline, HISTORY_REQUEST))
    big, empty = (sum(history["cpu"][name].values()) for name in ("big", "empty"))
    rows += row(SCENARIO, f"CPU per link, every process ({history['runs']:,} runs in the database)", "ms",
                round(big, 3), [("an empty database", round(empty, 3))], f"ratio <= {HISTORY_LINK_CPU:g}",
                at_most(big, empty, HISTORY_LINK_CPU))
    prune = history["prune"]
    load = prune["load"]
    caught = ("not caught up" if not prune["caught_up"]
              else f"caught up after {prune['caught_up_seconds']:,} s")
    rows += row(SCENARIO, f"runs pruned per second (keep {prune['keep_runs_days']} day: {prune['expected']:,} "
                f"past it, {caught})", "/s", prune["rows_per_second"],
                [("the load's runs per second", round(load["schedules"] / load["interval"], 1))])
    during, after = prune["lateness_while_pruning"].get("p99_ms"), prune["lateness_after"].get("p99_ms")
    rows += row(SCENARIO, f"lateness p99 while pruning ({load['schedules']} @ {load['interval']}s, "
                f"{load['workers']} workers)", "ms", during, [("the same load once caught up", after)],
                f"<= {HISTORY_PRUNING_P99_MS:g} ms", None if during is None else during <= HISTORY_PRUNING_P99_MS)
    growth = prune["growth_after_bytes"] if prune["caught_up"] else None
    share = prune["new_runs_after_bytes"]
    rows += row(SCENARIO, "database growth once retention is reached", "MB",
                None if growth is None else round(growth / 1e6, 3),
                [(f"its {prune['new_runs_after']:,} new runs at the history's bytes per run", round(share / 1e6, 3)),
                 ("size at catch-up", round(prune["size_at_catch_up"]["bytes"] / 1e6, 1))],
                f"<= {HISTORY_GROWTH_SHARE:g} x new runs", None if growth is None else growth <= HISTORY_GROWTH_SHARE
                * share)
    return rows

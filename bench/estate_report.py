"""Scenario 10's table lines: lateness of the window's runs at the estate's size, every due run run and none
early, Redis's bytes per schedule, and what the reconciler had to repair (issue 51's targets)."""

from __future__ import annotations

from typing import Any

from bench.report import on_database, row
from bench.targets import ESTATE_P99_MS, ESTATE_REDIS_BYTES

Row = dict[str, Any]
SCENARIO = "10 estate"


def estate_rows(estate: Any, database: str) -> list[Row]:
    return on_database(_rows(estate) if estate else [], database)


def _rows(estate: dict[str, Any]) -> list[Row]:
    if "error" in estate:
        return row(SCENARIO, "the scenario", "", None, [("error", estate["error"])], "completes", False)
    load = f"{estate['schedules']:,} schedules, {estate['rate_due']:g} links/s due for {estate['seconds']} s"
    cores = estate["cpu_cores"]
    return [
        *row(SCENARIO, f"lateness p99 ({load})", "ms", estate["p99_ms"],
             [("p50", estate["p50_ms"]), ("max", estate["max_ms"])], f"<= {ESTATE_P99_MS:g} ms",
             estate["p99_ms"] <= ESTATE_P99_MS),
        *row(SCENARIO, "runs in the window", "runs", estate["fires"], [("due", estate["due"])],
             "== due", estate["fires"] == estate["due"]),
        *row(SCENARIO, "runs started early", "runs", estate["early"], [("runs in the window", estate["fires"])],
             "== 0", estate["early"] == 0),
        *row(SCENARIO, "Redis per active schedule", "B", estate["redis_bytes_per_schedule"],
             [("at the window's end, finished links' results kept", estate["redis_bytes_per_schedule_at_end"])],
             f"<= {ESTATE_REDIS_BYTES} B",
             estate["redis_bytes_per_schedule"] <= ESTATE_REDIS_BYTES),
        *row(SCENARIO, "links the reconciler made again in the window", "", estate["links_repaired"],
             [("passes", estate["passes"]), ("sweeps", estate["sweeps"])], "== 0", estate["links_repaired"] == 0),
        *row(SCENARIO, "CPU, share of one core", "", round(sum(cores.values()), 2),
             [(role, value) for role, value in cores.items()]),
    ]

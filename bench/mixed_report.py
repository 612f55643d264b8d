"""Scenario 9's table lines: each load row's quick and slow lateness, the runs it started, each worker's memory
with its slots, and throughput per worker process with N slots beside bare RQ's worker-pool (bench/targets.py
holds the limits)."""

from __future__ import annotations

from typing import Any

from bench.report import on_database, row
from bench.targets import MIXED_OWN_QUEUE_RATIO, MIXED_ROOMY_P99_MS, at_most

Row = dict[str, Any]
SCENARIO = "9 mixed"


def mixed_rows(mixed: Any, database: str) -> list[Row]:
    return on_database(_rows(mixed) if mixed else [], database)


def _label(key: str, entry: dict[str, Any], mixed: dict[str, Any]) -> str:
    slow_count, slow_interval = entry.get("slow_count", mixed["slow"][0]), mixed["slow"][1]
    low, high = mixed["sleep"]
    slow = f"{slow_count} slow (sleep {low:g}-{high:g} s @ {slow_interval}s)"
    if entry["own_queue"] and not entry["slow"]:
        return (f"quick alone on a worker x{entry['concurrency']}, beside an idle worker x{entry['own_queue']} on a "
                "queue of its own")
    if entry["own_queue"]:
        return f"{slow} on their own queue and worker x{entry['own_queue']}, quick on a worker x{entry['concurrency']}"
    beside = f" beside {slow}" if entry["slow"] else " alone"
    return f"quick{beside}, one worker x{entry['concurrency']}"


def _baseline(loads: dict[str, Any], concurrency: int, own_queue: int | None = None) -> dict[str, Any] | None:
    """The quick load alone on a worker with `concurrency` slots (beside an idle worker with `own_queue` slots on
    a queue of its own, or alone), if that row was measured."""
    for entry in loads.values():
        if ("error" not in entry and not entry["slow"] and entry["concurrency"] == concurrency
                and entry["own_queue"] == own_queue):
            return dict(entry)
    return None


def _rows(mixed: dict[str, Any]) -> list[Row]:
    if "error" in mixed:
        return row(SCENARIO, "the scenario", "", None, [("error", mixed["error"])], "completes", False)
    rows: list[Row] = []
    quick_count, quick_interval = mixed["quick"]
    for key, entry in mixed["loads"].items():
        if "error" in entry:
            rows += row(SCENARIO, key, "", None, [("error", entry["error"])], "completes", False)
            continue
        label = _label(key, entry, mixed)
        quick = entry["quick"]
        baselines = [("p50", quick["p50_ms"]), ("max", quick["max_ms"])]
        target, passed = "", None
        slow_count = entry.get("slow_count", mixed["slow"][0])
        roomy = entry["slow"] and not entry["own_queue"] and entry["concurrency"] > slow_count
        if roomy:
            target, passed = f"<= {MIXED_ROOMY_P99_MS:g} ms", quick["p99_ms"] <= MIXED_ROOMY_P99_MS
        if entry["own_queue"] and entry["slow"]:
            # Judged against the same two workers with no slow task (the cost of the slow tasks themselves); the
            # one-worker figure beside it shows what the second worker.py costs on the machine.
            same = _baseline(mixed["loads"], entry["concurrency"], entry["own_queue"])
            same_p99 = None if same is None else same["quick"]["p99_ms"]
            one = _baseline(mixed["loads"], entry["concurrency"])
            baselines[:0] = [
                (f"p99 of the quick load alone, the same two workers (x{entry['concurrency']}, idle "
                 f"x{entry['own_queue']})", same_p99),
                (f"p99 of the quick load alone, one worker x{entry['concurrency']}",
                 None if one is None else one["quick"]["p99_ms"]),
            ]
            target = f"ratio <= {MIXED_OWN_QUEUE_RATIO:g}"
            passed = at_most(quick["p99_ms"], same_p99, MIXED_OWN_QUEUE_RATIO)
        load = f"{quick_count} quick @ {quick_interval}s for {mixed['seconds']}s"
        rows += row(SCENARIO, f"quick lateness p99 ({load}; {label})", "ms", quick["p99_ms"], baselines, target,
                    passed)
        judged = roomy or bool(entry["own_queue"])
        rows += row(SCENARIO, f"quick runs started, of {quick['due']} due ({label})", "runs", quick["fires"],
                    [("missed (catch-up)", quick["missed"]), ("not started when the drain ended",
                                                              quick["not_started"])],
                    "== due" if judged else "", quick["fires"] == quick["due"] if judged else None)
        slow = entry.get("slow_runs")
        if slow:
            rows += row(SCENARIO, f"slow lateness p99 ({label})", "ms", slow["p99_ms"],
                        [("p50", slow["p50_ms"]), ("max", slow["max_ms"]), ("runs started", slow["fires"]),
                         ("runs due", slow["due"])])
        for worker, memory in entry["memory"].items():
            rows += row(SCENARIO, f"worker {worker!r} PSS, its processes summed ({label})", "MB", memory["pss_mb"],
                        [("RSS summed", memory["rss_mb"]), ("processes", memory["processes"])])
    for slots, entry in mixed["throughput"].items():
        recur = entry["recur"]
        per_second = recur.get("per_second")
        rows += row(SCENARIO, f"fires/s per worker process, {slots[1:]} slots", "/s", per_second,
                    [(f"bare rq worker-pool -n {slots[1:]} (Worker) no-op", _figure(entry["rq_pool"], "per_second")),
                     (f"bare rq worker-pool -n {slots[1:]} -w SimpleWorker no-op",
                      _figure(entry["rq_pool_simple"], "per_second"))])
        rows += row(SCENARIO, f"PSS of a worker process with {slots[1:]} slots, after the drain", "MB",
                    (recur.get("memory") or {}).get("pss_mb"),
                    [(f"bare rq worker-pool -n {slots[1:]} (Worker)",
                      (entry["rq_pool"].get("memory") or {}).get("pss_mb", entry["rq_pool"].get("error"))),
                     (f"bare rq worker-pool -n {slots[1:]} -w SimpleWorker",
                      (entry["rq_pool_simple"].get("memory") or {}).get("pss_mb",
                                                                        entry["rq_pool_simple"].get("error")))])
    return rows


def _figure(result: dict[str, Any], key: str) -> Any:
    """A baseline's figure, or its error when it could not be measured."""
    return result.get(key, result.get("error"))

"""The chaos run's promises, checked against the run history, Redis and the execution log once the faults
stop: no body ran more often than at-least-once allows, no chain was lost, counters agree with the runs, every
success was recorded as one; and how long each kind of fault took to repair."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from redis import Redis
from sqlalchemy import text
from sqlalchemy.engine import Engine

from bench import executions
from bench.chaos_faults import Fault


def _percentile(values: list[float], pct: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(pct / 100 * (len(ordered) - 1))))]


def _epoch(instant: Any) -> float:
    if isinstance(instant, str):  # SQLite hands raw SQL back as text
        instant = datetime.fromisoformat(instant)
    return float(instant.replace(tzinfo=UTC).timestamp())


def check(engine: Engine, redis: Redis, kinds: dict[str, str], faults: list[Fault], pass_seconds: float,
           ended_at: float, execution_log: Path, killed_pids: set[int]) -> dict[str, Any]:
    with engine.connect() as conn:
        rows = conn.execute(text(
            "SELECT schedule_id, repeat_number, retry_number, status, error, finished_at FROM runs")).all()
        attempts = {(row[0], row[1], row[2]): (row[3], row[4]) for row in rows}
        write_offs = [_epoch(row[5]) for row in rows
                      if row[5] is not None and executions.written_off((row[3], row[4]))]
        duplicates = conn.execute(text(
            "SELECT schedule_id, repeat_number, retry_number, count(*) FROM runs "
            "WHERE status IN ('succeeded', 'failed', 'timed_out') "
            "GROUP BY schedule_id, repeat_number, retry_number HAVING count(*) > 1")).all()
        schedules = conn.execute(text(
            "SELECT id, status, interval_seconds, run_count, error_count, current_repeat, current_retry, "
            "running_run_id FROM scheduled_jobs")).all()
        counts = {
            (row[0], row[1]): row[2]
            for row in conn.execute(text("SELECT schedule_id, status, count(*) FROM runs GROUP BY 1, 2")).all()
        }
        starts: dict[str, list[float]] = {}
        for schedule_id, started_at in conn.execute(text("SELECT schedule_id, started_at FROM runs")).all():
            starts.setdefault(schedule_id, []).append(_epoch(started_at))

    links = cast(list[bytes], redis.zrange("rq:scheduled:recur", 0, -1) + redis.lrange("rq:queue:recur", 0, -1))
    pending = {m.decode().rsplit("-n", 1)[0][len("sched-"):] for m in links}
    stalled = []
    mismatched = []
    for row in schedules:
        schedule_id, status, interval = row[0], row[1], row[2]
        succeeded = counts.get((schedule_id, "succeeded"), 0)
        failed = counts.get((schedule_id, "failed"), 0) + counts.get((schedule_id, "timed_out"), 0)
        if (row[3], row[4]) != (succeeded, failed):
            mismatched.append((schedule_id, row[3], row[4], succeeded, failed))
        if status != "active":
            continue
        window = 3 * interval + pass_seconds
        recent = any(t > ended_at - window for t in starts.get(schedule_id, []))
        if schedule_id not in pending and row[7] is None and not recent:
            stalled.append(schedule_id)

    repair: list[float] = []
    by_kind: dict[str, list[float]] = {}
    for fault in faults:
        over = fault.until or fault.at  # a stall or restart is repaired from its end
        for schedule_id, kind in kinds.items():
            if kind == "timeout":
                continue  # in backoff for up to 10 intervals by design; not a repair figure
            later = [t for t in starts.get(schedule_id, []) if t > over]
            if later:
                repair.append(min(later) - over)
                by_kind.setdefault(fault.kind, []).append(min(later) - over)
    # Each write-off is put down to the latest fault before it, if that fault was over at most 30 s earlier.
    offs_by_kind: Counter[str] = Counter()
    for at in write_offs:
        before = [f for f in faults if f.at <= at]
        latest = max(before, key=lambda f: f.at) if before else None
        offs_by_kind[latest.kind if latest is not None and at - (latest.until or latest.at) <= 30 else "none"] += 1
    successes_path = Path(str(execution_log) + ".ok")
    successes = executions.successes_recorded_otherwise(
        executions.parse(successes_path.read_text().splitlines()) if successes_path.exists() else [], attempts,
        killed_pids)
    return {
        "schedules": len(schedules),
        "statuses": dict(Counter(row[1] for row in schedules)),
        "runs": sum(counts.values()),
        "runs_by_status": {status: sum(v for (_, s), v in counts.items() if s == status)
                           for status in {s for (_, s) in counts}},
        # From the execution log: (a) restarted_after_write_off, (b) unexplained (must be 0).
        "executions": executions.classify(executions.parse(execution_log.read_text().splitlines()), attempts)
        if execution_log.exists() else {"body_starts": 0},
        "runs_claimed_not_skipped": sum(1 for status, _ in attempts.values() if status != "skipped"),
        # Two runs of one (schedule, repeat, retry) in the runs table: 0 by its unique index whatever happens.
        "runs_table_duplicate_attempts": len(duplicates),
        "stalled_active_schedules": len(stalled),
        "counter_mismatches": len(mismatched),
        "faults": dict(Counter(f.kind for f in faults)),
        "repair_seconds": _summary(repair),
        # Per fault kind: the repair time from the fault's end, and the runs written off after it.
        "by_fault": {kind: {"repair_seconds": _summary(by_kind.get(kind, [])), "written_off": offs_by_kind[kind]}
                     for kind in sorted({f.kind for f in faults})},
        "written_off_with_no_fault_before": offs_by_kind["none"],
        # Bodies that succeeded (logged before their outcome is committed) recorded as anything else: only a
        # SIGKILL of the process that ran one explains it; any other must be 0.
        "successes": successes,
        "examples": {"duplicates": [list(map(str, d)) for d in duplicates[:5]], "stalled": stalled[:5],
                     "mismatched": [list(map(str, m)) for m in mismatched[:5]]},
    }


def _summary(values: list[float]) -> dict[str, float]:
    return {"p50": round(_percentile(values, 50), 2), "p99": round(_percentile(values, 99), 2),
            "max": round(max(values, default=0.0), 2), "samples": len(values)}


def verdict(report: dict[str, Any], max_repair_p99: float) -> list[str]:
    broken = []
    runs = report["executions"]
    if not runs["body_starts"]:
        broken.append("the execution log recorded no task body start")
    if runs.get("unexplained"):
        broken.append(f"{runs['unexplained']} ticks' bodies started more often than at-least-once allows")
    if runs.get("runs_without_a_logged_start"):
        broken.append(f"{runs['runs_without_a_logged_start']} runs ran with no start in the execution log")
    if report["runs_table_duplicate_attempts"]:
        broken.append(f"{report['runs_table_duplicate_attempts']} attempts were claimed twice")
    if report["stalled_active_schedules"]:
        broken.append(f"{report['stalled_active_schedules']} active schedules lost their chain")
    if report["counter_mismatches"]:
        broken.append(f"{report['counter_mismatches']} schedules' counters disagree with their run history")
    if report["successes"]["recorded_otherwise"]:
        broken.append(f"{report['successes']['recorded_otherwise']} bodies that succeeded were recorded otherwise")
    if report["repair_seconds"]["p99"] > max_repair_p99:
        broken.append(f"repair time p99 {report['repair_seconds']['p99']}s > {max_repair_p99}s")
    return broken

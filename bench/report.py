"""Turns the scenarios' figures into the table (Recur beside each baseline, the ratio, the target)."""

from __future__ import annotations

import math
from typing import Any

Row = dict[str, Any]


def _ratio(recur: Any, baseline: Any) -> float | None:
    if not isinstance(recur, int | float) or not isinstance(baseline, int | float) or not baseline:
        return None
    if math.isnan(recur) or math.isnan(baseline):
        return None
    return recur / baseline


def _get(result: Any, key: str) -> Any:
    if not isinstance(result, dict) or "error" in result:
        return None
    return result.get(key)


def _value(result: Any, key: str) -> Any:
    """A baseline's figure, or its error when it could not be measured."""
    value = _get(result, key)
    return value if value is not None else (result or {}).get("error")


def row(scenario: str, figure: str, unit: str, recur: Any, baselines: list[tuple[str, Any]],
        target: str = "", passed: bool | None = None, ratio_of: str = "recur/baseline") -> list[Row]:
    """One table line per baseline; the target and result go on the first."""
    lines = []
    for index, (label, value) in enumerate(baselines):
        lines.append({
            "scenario": scenario, "figure": figure, "unit": unit, "recur": recur, "baseline": label,
            "baseline_value": value, "ratio": _ratio(recur, value), "ratio_of": ratio_of,
            "target": target if index == 0 else "", "pass": passed if index == 0 else None,
        })
    return lines


def build_rows(results: dict[str, Any], cores: int) -> list[Row]:
    rows: list[Row] = []
    tp = results.get("throughput")
    if tp:
        for kind, bare_name in (("simple", "SimpleWorker"), ("forking", "Worker")):
            for workers in sorted({1, cores}):
                key = f"{kind}x{workers}"
                recur = _get(tp["recur"].get(key), "per_worker")
                bare = _get(tp["rq"].get(key), "per_worker")
                ratio = _ratio(recur, bare)
                rows += row("1 throughput", f"fires/s per worker, {kind} x{workers}", "/s", recur,
                            [(f"bare RQ {bare_name} x{workers} no-op", bare or tp["rq"].get(key, {}).get("error"))],
                            "ratio >= 0.60", None if ratio is None else ratio >= 0.6)
        for workers in sorted({1, cores}):  # the default worker (Procfile), against both RQ worker classes
            pool = _get(tp["recur"].get(f"poolx{workers}"), "per_worker")
            forking = _get(tp["rq"].get(f"forkingx{workers}"), "per_worker")
            simple = _get(tp["rq"].get(f"simplex{workers}"), "per_worker")
            if pool is None:
                continue
            vs_fork, vs_simple = _ratio(pool, forking), _ratio(pool, simple)
            rows += row("1 throughput", f"fires/s per worker, default worker (pool) x{workers}", "/s", pool,
                        [(f"bare RQ Worker x{workers} no-op", forking)], "ratio >= 2.0",
                        None if vs_fork is None else vs_fork >= 2.0)
            rows += row("1 throughput", f"fires/s per worker, default worker (pool) x{workers}", "/s", pool,
                        [(f"bare RQ SimpleWorker x{workers} no-op", simple)], "ratio >= 0.80",
                        None if vs_simple is None else vs_simple >= 0.8)
    for steady in results.get("lateness") or []:
        recur = steady["recur"]
        baselines = [("RQ enqueue_at + its scheduler", steady["rq"]), ("rq-scheduler interval", steady["rqs"])]
        load = f"{steady['schedules']} @ {steady['interval']}s for {steady['seconds']}s"
        for key, label, limit in (("p50_ms", "lateness p50", None), ("p99_ms", "lateness p99", 100.0),
                                  ("max_ms", "lateness max", 250.0)):
            value = _get(recur, key)
            passed = None if limit is None or value is None else value <= limit
            rows += row("2 steady load", f"{label} ({load})", "ms", value,
                        [(name, _value(b, key)) for name, b in baselines],
                        f"<= {limit:g} ms" if limit else "", passed)
        early = _get(recur, "early")
        rows += row("2 steady load", f"runs started early ({load})", "runs", early,
                    [(name, _value(b, "early")) for name, b in baselines], "== 0",
                    None if early is None else early == 0)
        fires = _get(recur, "fires")
        rows += row("2 steady load", f"runs in window, of {_get(recur, 'expected')} due ({load})", "runs", fires,
                    [(name, _value(b, "fires")) for name, b in baselines], "== due",
                    None if fires is None else fires == _get(recur, "expected"))
    herd = results.get("herd")
    if herd:
        count = herd["count"]
        recur = herd["recur"]
        baselines = [("RQ enqueue_at + its scheduler", herd["rq"]), ("rq-scheduler", herd["rqs"])]
        rows += row("3 herd", f"{count} due in one second: last started after", "s", _get(recur, "drain_seconds"),
                    [(n, _get(b, "drain_seconds") if _get(b, "drain_seconds") is not None else b.get("error"))
                     for n, b in baselines])
        recur_floor = herd.get("recur_floor_seconds")
        rq_floor = herd.get("rq_floor_seconds")
        recur_x = _ratio(_get(recur, "drain_seconds"), recur_floor)
        rows += row("3 herd", f"drain / throughput floor ({recur_floor} s Recur, {rq_floor} s bare RQ)", "x",
                    None if recur_x is None else round(recur_x, 2),
                    [(n, None if _ratio(_get(b, "drain_seconds"), rq_floor) is None
                      else round(_ratio(_get(b, "drain_seconds"), rq_floor) or 0, 2)) for n, b in baselines],
                    "<= 1.5", None if recur_x is None else recur_x <= 1.5)
    scale = results.get("scale")
    if scale:
        for entry in scale:
            n = entry["count"]
            recur, rq = entry["recur"], entry["rq"]
            label = f"{n:,}"
            startup = _get(recur, "startup_recovery_seconds")
            limit = 20.0 if n >= 100_000 else None
            rows += row("4 scale", f"{label}: startup recovery", "s", startup,
                        [(f"RQ: schedule {label} jobs (pipelined)", _get(rq, "schedule_seconds"))],
                        "<= 20 s" if limit else "", None if limit is None or startup is None else startup <= limit)
            rows += row("4 scale", f"{label}: one reconciler pass", "s", _get(recur, "pass_seconds"),
                        [("floor: read rows + ZSCORE each", _get(recur, "pass_floor_seconds"))])
            rows += row("4 scale", f"{label}: one pass beside {label} queued links", "s",
                        _get(recur, "backlog_pass_seconds"),
                        [("the same pass, none queued", _get(recur, "pass_seconds"))])
            rows += row("4 scale", f"{label}: Redis CPU of that pass", "ms", _get(recur, "backlog_pass_redis_cpu_ms"),
                        [("the same pass, none queued", _get(recur, "pass_redis_cpu_ms"))])
            per = _get(recur, "redis_bytes_per_schedule")
            rows += row("4 scale", f"{label}: Redis per active schedule", "B", per,
                        [("RQ: Redis per scheduled job", _get(rq, "redis_bytes_per_job"))],
                        "<= 2048 B", None if per is None else per <= 2048)
            mb = _get(recur, "database_bytes")
            rows += row("4 scale", f"{label}: database size (SQLite)", "MB",
                        None if mb is None else round(mb / 1e6, 1),
                        [("RQ: Redis for the same jobs", None if _get(rq, "redis_bytes_per_job") is None
                          else round(_get(rq, "redis_bytes_per_job") * n / 1e6, 1))])
    api = results.get("api")
    if api:
        recur, floor = api["recur"], api["floor"]
        for key, label, limit in (("create_p50_ms", "create p50", None), ("create_p99_ms", "create p99", 20.0),
                                  ("list_p50_ms", "list (50 items) p50", None),
                                  ("list_p99_ms", "list (50 items) p99", None)):
            value = _get(recur, key)
            rows += row("5 API", f"{label} ({api['requests']} requests)", "ms", value,
                        [("bare Flask+gunicorn, same shapes", _get(floor, key) or floor.get("error"))],
                        f"<= {limit:g} ms" if limit else "", None if limit is None or value is None else value <= limit)
    return rows


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return f"{value:,.2f}" if abs(value) < 100 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)[:60]


def render(rows: list[Row]) -> str:
    headers = ["scenario", "figure", "unit", "Recur", "baseline", "value", "ratio", "target", "result"]
    table = []
    previous = None
    for item in rows:
        same = previous is not None and (item["scenario"], item["figure"]) == previous
        previous = (item["scenario"], item["figure"])
        result = "" if item["pass"] is None else ("PASS" if item["pass"] else "FAIL")
        if item["target"] and item["pass"] is None:
            result = "n/a"
        table.append([
            "" if same else item["scenario"], "" if same else item["figure"], "" if same else item["unit"],
            "" if same else _fmt(item["recur"]), item["baseline"], _fmt(item["baseline_value"]),
            "-" if item["ratio"] is None else f"{item['ratio']:.2f}", item["target"], result,
        ])
    widths = [max(len(h), *(len(r[i]) for r in table)) if table else len(h) for i, h in enumerate(headers)]
    numeric = {3, 5, 6}
    lines = []

    def fmt_line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if i in numeric else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths,
                                                                                                      strict=True)))

    lines.append(fmt_line(headers).rstrip())
    lines.append("  ".join("-" * w for w in widths))
    for cells in table:
        lines.append(fmt_line(cells).rstrip())
    return "\n".join(lines)

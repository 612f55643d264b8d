"""`python -m bench [--quick]`: starts its own redis-server and workers, runs the five scenarios, prints one
table (Recur beside its baselines, measured in the same run) and writes the figures as JSON."""

from __future__ import annotations

import argparse
import json
import logging
import platform
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

from bench import api, lateness, scale, throughput
from bench.report import build_rows, render
from bench.stack import Bench, cores

HERE = Path(__file__).resolve().parent

FULL = {
    "rounds": 5, "throughput_simple": 2000, "throughput_forking": 300,
    # (schedules, interval s, seconds): the example load, then one whose per-second batch is 8.
    "loads": [(1000, 20, 60), (1000, 120, 120)], "herd": 1000,
    "scale": [10_000, 100_000], "api": 1000, "rqs_poll": 0.1,
}
QUICK = {
    "rounds": 1, "throughput_simple": 60, "throughput_forking": 30,
    "loads": [(30, 3, 4)], "herd": 30,
    "scale": [200, 1000], "api": 30, "rqs_poll": 0.1,
}


def say(message: str) -> None:
    print(f"[bench {datetime.now():%H:%M:%S}] {message}", file=sys.stderr, flush=True)


def attempt(what: str, fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run one measurement; a failure is reported as such (with its error), never as a number."""
    say(what)
    try:
        result = fn()
    except Exception as exc:  # a baseline that does not work here is reported, not faked
        traceback.print_exc()
        result = {"error": f"{type(exc).__name__}: {exc}"[:300]}
    say(f"  -> {result}")
    return result


def machine() -> dict[str, Any]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        memory = Path("/proc/meminfo").read_text().splitlines()[0].split()[1]
        memory_gb = round(int(memory) / 1024 / 1024, 1)
    except (OSError, IndexError, ValueError):
        memory_gb = None
    redis_version = subprocess.run([shutil.which("redis-server") or "redis-server", "--version"],
                                   capture_output=True, text=True).stdout.split()[2].removeprefix("v=")
    packages = {}
    for name in ("rq", "rq-scheduler", "redis", "flask", "sqlalchemy", "gunicorn"):
        try:
            packages[name] = version(name)
        except Exception:
            packages[name] = "missing"
    return {"cpu": cpu, "cores": cores(), "memory_gb": memory_gb, "os": platform.platform(),
            "python": platform.python_version(), "redis_server": redis_version, "sqlite": sqlite3.sqlite_version,
            **packages}


def run(config: dict[str, Any], only: set[str]) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="recur-bench-"))
    bench = Bench(workdir)
    n = cores()
    results: dict[str, Any] = {}
    try:
        if "1" in only or "3" in only:
            tp: dict[str, Any] = {"recur": {}, "rq": {}, "rounds": config["rounds"]}
            # "pool" is worker.py's default (the Procfile's): measured beside both bare RQ worker classes,
            # whose rows come from the simple and forking rounds (interleaved with its own).
            kinds = (("simple", config["throughput_simple"]), ("forking", config["throughput_forking"]),
                     ("pool", config["throughput_simple"]))
            for workers in sorted({1, n}):
                samples: dict[str, dict[str, list[dict[str, Any]]]] = {
                    kind: {"rq": [], "recur": []} for kind, _ in kinds}
                for round_ in range(1, config["rounds"] + 1):  # interleaved, so drift hits all alike
                    for kind, count in kinds:
                        key = f"{kind}x{workers}"
                        simple = kind == "simple"
                        if kind != "pool":
                            samples[kind]["rq"].append(attempt(
                                f"1 throughput: bare RQ {key}, {count} jobs (round {round_})",
                                lambda w=workers, s=simple, c=count: throughput.bare_rq(bench, w, s, c)))
                        samples[kind]["recur"].append(attempt(
                            f"1 throughput: Recur {key}, {count} fires (round {round_})",
                            lambda w=workers, s=simple, c=count, k=kind: throughput.recur(bench, w, s, c, k)))
                for kind, _ in kinds:
                    for system in ("rq", "recur"):
                        if samples[kind][system]:
                            tp[system][f"{kind}x{workers}"] = throughput.best(samples[kind][system])
            results["throughput"] = tp
        if "2" in only:
            results["lateness"] = []
            for schedules, interval, seconds in config["loads"]:
                args = (schedules, interval, seconds, n)
                label = f"{schedules} schedules @ {interval}s for {seconds}s, {n} workers"
                results["lateness"].append({
                    "schedules": schedules, "interval": interval, "seconds": seconds, "workers": n,
                    "recur": attempt(f"2 steady load: Recur, {label}",
                                     lambda a=args: lateness.recur_steady(bench, *a)),
                    "rq": attempt(f"2 steady load: RQ enqueue_at, {label}",
                                  lambda a=args: lateness.rq_steady(bench, *a)),
                    "rqs": attempt(f"2 steady load: rq-scheduler (poll {config['rqs_poll']}s), {label}",
                                   lambda a=args: lateness.rqs_steady(bench, *a, poll=config["rqs_poll"])),
                })
        if "3" in only:
            count = config["herd"]
            herd: dict[str, Any] = {"count": count, "workers": n}
            herd["recur"] = attempt(f"3 herd: Recur, {count}", lambda: lateness.recur_herd(bench, count, n))
            herd["rq"] = attempt(f"3 herd: RQ enqueue_at, {count}", lambda: lateness.rq_herd(bench, count, n))
            herd["rqs"] = attempt(f"3 herd: rq-scheduler, {count}",
                                  lambda: lateness.rqs_herd(bench, count, n, config["rqs_poll"]))
            tp = results.get("throughput", {})
            recur_rate = (tp.get("recur", {}).get(f"simplex{n}") or {}).get("per_second")
            rq_rate = (tp.get("rq", {}).get(f"simplex{n}") or {}).get("per_second")
            herd["recur_floor_seconds"] = round(count / recur_rate, 2) if recur_rate else None
            herd["rq_floor_seconds"] = round(count / rq_rate, 2) if rq_rate else None
            results["herd"] = herd
        if "4" in only:
            results["scale"] = [
                {"count": count,
                 "recur": attempt(f"4 scale: Recur, {count:,} schedules", lambda c=count: scale.recur(bench, c)),
                 "rq": attempt(f"4 scale: RQ, {count:,} scheduled jobs", lambda c=count: scale.bare_rq(bench, c))}
                for count in config["scale"]
            ]
        if "5" in only:
            results["api"] = {
                "requests": config["api"],
                "recur": attempt(f"5 API: Recur, {config['api']} creates + lists",
                                 lambda: api.recur(bench, config["api"])),
                "floor": attempt("5 API: bare Flask + gunicorn", lambda: api.floor(bench, config["api"])),
            }
    finally:
        bench.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="tiny sizes: checks that every figure is produced")
    parser.add_argument("--out", type=Path, default=HERE / "results.json", help="where to write the JSON")
    parser.add_argument("--only", default="1,2,3,4,5", help="comma-separated scenario numbers")
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)  # the in-process app's recovery warnings would drown the progress lines
    config = dict(QUICK if args.quick else FULL)
    started = time.monotonic()
    results = run(config, set(args.only.split(",")))
    rows = build_rows(results, cores())
    document = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"), "quick": args.quick,
        "seconds": round(time.monotonic() - started), "machine": machine(), "config": config,
        "results": results, "rows": rows,
        "all_targets_pass": all(r["pass"] for r in rows if r["target"]),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=2, default=str) + "\n")
    m = document["machine"]
    print(f"Recur bench ({'quick' if args.quick else 'full'}), {document['when']}, {document['seconds']} s: "
          f"{m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB, Python {m['python']}, redis-server "
          f"{m['redis_server']}, rq {m['rq']}, rq-scheduler {m['rq-scheduler']}, SQLite {m['sqlite']}")
    print(render(rows))
    print(f"targets: {'all PASS' if document['all_targets_pass'] else 'some FAIL'}; JSON in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

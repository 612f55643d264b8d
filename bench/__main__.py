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
from functools import partial
from importlib.metadata import version
from pathlib import Path
from typing import Any

from bench import api, burst, estate, history, lateness, memory, mixed, scale, throughput
from bench.estate_report import estate_rows
from bench.history_report import history_rows
from bench.mixed_report import mixed_rows
from bench.report import build_rows, render
from bench.stack import Bench, cores, postgres_available

HERE = Path(__file__).resolve().parent

FULL = {
    "rounds": 3, "throughput_simple": 2000, "throughput_forking": 300,
    # (schedules, interval s, seconds): 1,000 spread over 20 s. (`--loads 1000:120:120` adds the slower load
    # earlier runs measured.)
    "loads": [(1000, 20, 60)], "herd": 1000,
    "scale": [10_000, 100_000], "api": 1000, "rqs_poll": 0.1,
    "scale_api": 200,  # scenario 4: creates and list reads through gunicorn beside each estate
    # The other worker modes beside the default in scenario 2 (on its first load only: each costs a load).
    "steady_modes": ["simple", "fork"],
    "burst": {"count": 1000, "interval": 60, "rounds": 2},
    "memory": {"schedules": 1000, "marks": [1000, 100_000]},
    "throughput_workers": "one, and one per core",
    # Scenario 8 (`--only history`, not in the default run): runs over schedules, `big` of them behind one,
    # beside `small` runs in all; timed requests each; links drained for their CPU; the pruning load
    # (schedules, interval s), sampled every `sample` s until `settle` s after it caught up, `limit` s at most.
    "history": {"runs": 10_000_000, "schedules": 1000, "big": 2_000_000, "small": 1000, "requests": 200,
                "warmup": 20, "links": 1600, "load": (300, 10), "sample": 5, "settle": 60, "limit": 1200},
    # Scenario 9 (`--only mixed`, not in the default run): quick schedules (count, interval s) beside slow ones
    # (count, interval s) whose tasks sleep (low, high) s, first due over slow_spread s, for `seconds`, each row
    # waiting `drain` s at most for its window's runs; one worker with each concurrency (None: the default)
    # for the quick load alone and beside the slow one; the slow workflow on its own queue and worker
    # (own_queue slots); few_slow: the default worker beside one slow schedule fewer than its slots; throughput
    # of one worker with each of throughput_slots beside rq worker-pool.
    "mixed": {"quick": (1000, 20), "slow": (20, 60), "sleep": (5, 30), "slow_spread": 20, "seconds": 120,
              "drain": 30, "baseline": [None, 24], "mixed": [24, None], "own_queue": 24, "few_slow": True,
              "throughput_slots": [2, 4], "throughput_count": 1000},
    # Scenario 10 (`--only estate`, not in the default run): `schedules` active ones, a mix that puts `rate`
    # links a second due, run by one worker per core for `seconds` after `warmup` (bench/estate.py).
    "estate": {"schedules": 1_000_000, "rate": 300, "seconds": 600, "warmup": 60},
}
# Tiny and short: every figure, in as few seconds as each scenario's waits allow (CI runs it on each database).
QUICK = {
    "rounds": 1, "throughput_simple": 60, "throughput_forking": 30,
    "loads": [(30, 2, 2)], "herd": 30,
    "scale": [200, 1000], "api": 30, "rqs_poll": 0.1, "scale_api": 10,
    "steady_modes": [],  # the worker's modes are each timed in scenario 1; scenario 2 runs the default one
    "burst": {"count": 30, "interval": 2, "rounds": 2},
    # More schedules than one worker runs in a second, so the marks come as fast as the worker goes.
    "memory": {"schedules": 300, "marks": [200, 1000]},
    "throughput_workers": "one per core",
    "history": {"runs": 8000, "schedules": 200, "big": 1600, "small": 400, "requests": 10, "warmup": 5,
                "links": 50, "load": (30, 2), "sample": 1, "settle": 5, "limit": 300},
    "mixed": {"quick": (10, 2), "slow": (4, 6), "sleep": (1, 3), "slow_spread": 2, "seconds": 5, "drain": 30,
              "baseline": [None], "mixed": [None, 2], "own_queue": 6, "few_slow": True, "throughput_slots": [2],
              "throughput_count": 60},
    "estate": {"schedules": 2000, "rate": 20, "seconds": 5, "warmup": 2, "setup": 6},
}
# Scenario 1's contenders: (system, kind); bare RQ's two worker classes on no-op jobs, SimpleWorker on jobs that
# record their own run in the database (bench/durable.py), then worker.py's three modes.
THROUGHPUT = [("rq", "simple"), ("rq", "durable"), ("rq", "forking"),
              ("recur", "default"), ("recur", "simple"), ("recur", "fork")]


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
    servers = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"))
    postgres = (subprocess.run([str(servers[-1]), "--version"], capture_output=True, text=True).stdout.split()[-1]
                if servers else "missing")
    return {"cpu": cpu, "cores": cores(), "memory_gb": memory_gb, "os": platform.platform(), "postgres": postgres,
            "python": platform.python_version(), "redis_server": redis_version, "sqlite": sqlite3.sqlite_version,
            **packages}


def _throughput(bench: Bench, system: str, workers: int, kind: str, count: int) -> dict[str, Any]:
    if system == "rq" and kind == "durable":
        return throughput.durable_rq(bench, workers, count)
    if system == "rq":
        return throughput.bare_rq(bench, workers, kind == "simple", count)
    return throughput.recur(bench, workers, kind, count)


def run(config: dict[str, Any], only: set[str], database: str) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="recur-bench-"))
    bench = Bench(workdir, database)
    n = cores()
    results: dict[str, Any] = {}
    tag = f"[{database}]"
    try:
        if only & {"1", "3", "6"}:
            tp: dict[str, Any] = {"recur": {}, "rq": {}, "rounds": config["rounds"]}
            for workers in sorted({1, n}) if config["throughput_workers"] != "one per core" else [n]:
                samples: dict[tuple[str, str], list[dict[str, Any]]] = {entry: [] for entry in THROUGHPUT}
                for round_ in range(1, config["rounds"] + 1):  # interleaved, so drift hits all alike
                    for system, kind in THROUGHPUT:
                        count = config["throughput_forking" if kind in ("fork", "forking") else "throughput_simple"]
                        samples[system, kind].append(attempt(
                            f"{tag} 1 throughput: {system} {kind} x{workers}, {count} (round {round_})",
                            partial(_throughput, bench, system, workers, kind, count)))
                for (system, kind), taken in samples.items():
                    tp[system][f"{kind}x{workers}"] = throughput.best(taken)
            results["throughput"] = tp
        if "2" in only:
            results["lateness"] = []
            for index, (schedules, interval, seconds) in enumerate(config["loads"]):
                load = (schedules, interval, seconds, n)
                label = f"{schedules} schedules @ {interval}s for {seconds}s, {n} workers"
                entry: dict[str, Any] = {
                    "schedules": schedules, "interval": interval, "seconds": seconds, "workers": n,
                    "recur": attempt(f"{tag} 2 steady load: Recur default worker, {label}",
                                     partial(lateness.recur_steady, bench, *load)),
                    "modes": {},
                }
                for mode in config["steady_modes"] if index == 0 else []:
                    entry["modes"][mode] = attempt(f"{tag} 2 steady load: Recur {mode} worker, {label}",
                                                   partial(lateness.recur_steady, bench, *load, mode=mode))
                entry["rq"] = attempt(f"{tag} 2 steady load: RQ enqueue_at, {label}",
                                      partial(lateness.rq_steady, bench, *load))
                entry["rqs"] = attempt(f"{tag} 2 steady load: rq-scheduler (poll {config['rqs_poll']}s), {label}",
                                       partial(lateness.rqs_steady, bench, *load, poll=config["rqs_poll"]))
                results["lateness"].append(entry)
        recur_rate = (results.get("throughput", {}).get("recur", {}).get(f"defaultx{n}") or {}).get("per_second")
        if "3" in only:
            count = config["herd"]
            herd: dict[str, Any] = {"count": count, "workers": n}
            herd["recur"] = attempt(f"{tag} 3 herd: Recur, {count}", lambda: lateness.recur_herd(bench, count, n))
            herd["rq"] = attempt(f"{tag} 3 herd: RQ enqueue_at, {count}", lambda: lateness.rq_herd(bench, count, n))
            herd["rqs"] = attempt(f"{tag} 3 herd: rq-scheduler, {count}",
                                  lambda: lateness.rqs_herd(bench, count, n, config["rqs_poll"]))
            rq_rate = (results["throughput"]["rq"].get(f"simplex{n}") or {}).get("per_second")
            herd["recur_floor_seconds"] = round(count / recur_rate, 2) if recur_rate else None
            herd["rq_floor_seconds"] = round(count / rq_rate, 2) if rq_rate else None
            results["herd"] = herd
        if "4" in only:
            results["scale"] = [
                {"count": count,
                 "recur": attempt(f"{tag} 4 scale: Recur, {count:,} schedules",
                                  partial(scale.recur, bench, count, config["scale_api"])),
                 "rq": attempt(f"{tag} 4 scale: RQ, {count:,} scheduled jobs", partial(scale.bare_rq, bench, count))}
                for count in config["scale"]
            ]
        if "5" in only:
            results["api"] = {
                "requests": config["api"],
                "recur": attempt(f"{tag} 5 API: Recur, {config['api']} creates + lists",
                                 lambda: api.recur(bench, config["api"])),
                "floor": attempt(f"{tag} 5 API: bare Flask + gunicorn", lambda: api.floor(bench, config["api"])),
            }
        if "6" in only:
            spec = config["burst"]
            results["burst"] = attempt(
                f"{tag} 6 burst: {spec['count']} schedules through the API @ {spec['interval']}s, {n} workers",
                lambda: burst.recur(bench, spec["count"], spec["interval"], spec["rounds"], n))
            results["burst"]["floor_seconds"] = round(spec["count"] / recur_rate, 3) if recur_rate else None
        if "7" in only:
            spec = config["memory"]
            results["memory"] = attempt(f"{tag} 7 memory: one default worker, RSS at {spec['marks']} links",
                                        lambda: memory.recur(bench, spec["schedules"], spec["marks"]))
        if "8" in only or "history" in only:
            spec = config["history"]
            results["history"] = attempt(
                f"{tag} 8 history: {spec['runs']:,} runs over {spec['schedules']:,} schedules "
                f"({spec['big']:,} behind one) beside {spec['small']:,}",
                lambda: history.recur(bench, spec, n, say))
        if "9" in only or "mixed" in only:
            spec = config["mixed"]
            results["mixed"] = attempt(
                f"{tag} 9 mixed: {spec['quick'][0]:,} quick schedules beside {spec['slow'][0]} slow ones, "
                f"{spec['seconds']} s a row", lambda: mixed.recur(bench, spec, say))
        if "10" in only or "estate" in only:
            spec = config["estate"]
            results["estate"] = attempt(
                f"{tag} 10 estate: {spec['schedules']:,} schedules, {spec['rate']} links/s due, {spec['seconds']} s",
                lambda: estate.recur(bench, spec, say))
    finally:
        bench.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="tiny sizes: checks that every figure is produced")
    parser.add_argument("--out", type=Path, default=HERE / "results.json", help="where to write the JSON")
    parser.add_argument("--only", default="1,2,3,4,5,6,7",
                        help="comma-separated scenario numbers (8, or history: a big run history; 9, or mixed: "
                             "quick schedules beside slow ones; 10, or estate: a big estate at work; none of these in "
                             "the default run)")
    parser.add_argument("--db", default=None,
                        help="comma-separated: sqlite, postgres (default: both, or sqlite alone where PostgreSQL's "
                             "server binaries are missing)")
    parser.add_argument("--loads", default=None,
                        help="scenario 2's loads, comma-separated SCHEDULES:INTERVAL:SECONDS (default 1000:20:60)")
    parser.add_argument("--rounds", type=int, default=None, help="scenario 1's interleaved rounds (default 3)")
    parser.add_argument("--scale", default=None,
                        help="scenario 4's numbers of schedules, comma-separated (default 10000,100000)")
    parser.add_argument("--estate", default=None,
                        help="scenario 10's SCHEDULES:RATE:SECONDS[:WORKERS] (default 1000000:300:600, one "
                             "worker per core)")
    parser.add_argument("--history-runs", type=int, default=None,
                        help="scenario 8's runs in all (default 10,000,000; a fifth behind one schedule)")
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)  # the in-process app's recovery warnings would drown the progress lines
    config = dict(QUICK if args.quick else FULL)
    if args.loads:
        config["loads"] = [tuple(int(part) for part in load.split(":")) for load in args.loads.split(",")]
    if args.rounds:
        config["rounds"] = args.rounds
    if args.scale:
        config["scale"] = [int(count) for count in args.scale.split(",")]
    if args.estate:
        schedules, rate, seconds, *workers = (int(part) for part in args.estate.split(":"))
        estate_spec: dict[str, Any] = dict(config["estate"])  # type: ignore[call-overload]
        config["estate"] = {**estate_spec, "schedules": schedules, "rate": rate, "seconds": seconds,
                            "workers": workers[0] if workers else None}
    if args.history_runs:
        history_spec: dict[str, Any] = dict(config["history"])  # type: ignore[call-overload]
        config["history"] = {**history_spec, "runs": args.history_runs, "big": args.history_runs // 5}
    databases = args.db.split(",") if args.db else ["sqlite", *(["postgres"] if postgres_available() else [])]
    only = set(args.only.split(","))
    if "3" in only or "6" in only:
        only.add("1")  # their floors are the throughput of the same run
    started = time.monotonic()
    results = {database: run(config, only, database) for database in databases}
    rows = [row for database in databases
            for row in [*build_rows(results[database], cores(), database),
                        *history_rows(results[database].get("history"), database),
                        *mixed_rows(results[database].get("mixed"), database),
                        *estate_rows(results[database].get("estate"), database)]]
    document = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"), "quick": args.quick,
        "seconds": round(time.monotonic() - started), "machine": machine(), "config": config,
        "databases": databases, "results": results, "rows": rows,
        "all_targets_pass": all(r["pass"] for r in rows if r["target"] and r.get("judged", True)),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=2, default=str) + "\n")
    m = document["machine"]
    print(f"Recur bench ({'quick' if args.quick else 'full'}), {document['when']}, {document['seconds']} s: "
          f"{m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB, Python {m['python']}, redis-server "
          f"{m['redis_server']}, rq {m['rq']}, rq-scheduler {m['rq-scheduler']}, SQLite {m['sqlite']}, "
          f"PostgreSQL {m['postgres']}")
    print(render(rows))
    targets = [r for r in rows if r["target"] and r.get("judged", True)]
    for r in targets:
        if r["pass"] is not True:
            print(f"  {'FAIL' if r['pass'] is False else 'n/a '}: [{r['database']}] {r['scenario']}, {r['figure']} "
                  f"vs {r['baseline']} ({r['target']})")
    held = sum(1 for r in targets if r["pass"])
    print(f"targets: {held} of {len(targets)} hold ({'all PASS' if document['all_targets_pass'] else 'some FAIL'}) "
          f"on {', '.join(databases)}; JSON in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

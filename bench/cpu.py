"""Where the CPU of a link goes, process by process, beside bare RQ's `SimpleWorker` on a no-op job.

    python -m bench.cpu [--db sqlite|postgres] [--count 1600] [--workers 2] [--slots N] [--rounds 1] [--rate R]

With one worker per core the cores are busy all the time, so throughput is set by the CPU one link costs
across every process (the workers, their work processes, redis-server, PostgreSQL's backends). This drains
`count` due links with the Procfile's default worker, and `count` no-op jobs with bare RQ's SimpleWorker
(plain, and recording each run durably as scenario 1's baseline does: bench.durable),
reading each process's CPU time (/proc/<pid>/stat: user + system, and that of reaped children) before and
after, and prints milliseconds of CPU per link by process. `count` stays under the work process's
recycling mark (1,000 tasks per worker), so no work process dies inside the window.

`--rate R`: the links and jobs arrive R a second instead of all at once, each link due at its own time (as a
scheduler's links arrive), each job enqueued at the same moment by this process; the window runs from the first
arrival to the last finish, idle moments included. A link drained from a backlog is late, and a late link's
claim reads its row for catch-up (the full claim); one that arrives on time takes the lean claim on PostgreSQL.
"""

from __future__ import annotations

import argparse
import bisect
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rq import Queue
from rq.registry import FinishedJobRegistry

from bench import durable
from bench.procfs import children, stat, with_descendants
from bench.stack import BASELINE_QUEUE, Bench, RecurEnv, postgres_available, start_rq_workers, stop_all, utc
from bench.tasks import noop
from harness.servers import wait_for

TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_times(pid: int) -> tuple[float, float]:
    """Seconds of CPU (user + system) of a process, and of its children it has reaped; zeros for a process
    that is gone (a PostgreSQL backend may end between the listing and the reading)."""
    try:
        fields = stat(pid)
    except (FileNotFoundError, ProcessLookupError):
        return 0.0, 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS, (int(fields[13]) + int(fields[14])) / TICKS


def _cpu(pid: int, reaped: bool = True) -> float:
    """Seconds of CPU of a process (user + system), with its reaped children's when `reaped`."""
    own, of_reaped = _cpu_times(pid)
    return own + of_reaped if reaped else own


def _postgres_pids() -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() == "postgres":
                    pids.append(int(entry.name))
            except (FileNotFoundError, ProcessLookupError):
                continue
    return pids


def sample(workers: list[int], redis_pid: int, database: str, descendants: bool = False) -> dict[str, float]:
    """Seconds of CPU so far by role: the worker.py processes `workers`; their children (with `descendants`,
    every process under them: slots, their work processes, the background process), with what those reaped;
    redis-server; PostgreSQL's server processes (none on SQLite: whatever server runs beside is not the bench's)."""
    times = [_cpu_times(pid) for pid in workers]
    under = ([child for pid in workers for child in with_descendants(pid) if child != pid] if descendants
             else [child for pid in workers for child in children(pid)])
    return {
        "worker processes": sum(own for own, _ in times),
        "their work processes": sum(of_reaped for _, of_reaped in times) + sum(_cpu(child) for child in under),
        "redis-server": _cpu(redis_pid, reaped=False),
        "PostgreSQL server processes": sum(_cpu(pid) for pid in _postgres_pids()) if database == "postgres" else 0.0,
    }


def _difference(before: dict[str, float], after: dict[str, float], count: int) -> dict[str, float]:
    return {role: round((after[role] - before[role]) * 1000 / count, 3) for role in before}


def measure_recur(bench: Bench, workers: int, count: int, *worker_args: str,
                  rate: float | None = None) -> dict[str, float]:
    env = bench.recur("cpu")
    try:
        return measure_links(env, workers, count, *worker_args, rate=rate)
    finally:
        env.stop()


def arrivals(count: int, rate: float, lead: float) -> list[float]:
    """Epoch seconds at which `count` arrivals `rate` a second start, `lead` seconds from now."""
    start = time.time() + lead
    return [start + index / rate for index in range(count)]


def measure_links(env: RecurEnv, workers: int, count: int, *worker_args: str,
                  rate: float | None = None) -> dict[str, float]:
    """CPU ms per link by process: `count` new schedules all due now in `env` (whatever else its database
    holds), or due `rate` a second from a few seconds on, drained by `workers` default workers (given
    `worker_args`), which are stopped afterwards."""
    workflow = env.workflow()
    try:
        env.start_workers(workers, "default", *worker_args)
        due = arrivals(count, rate, 5 + count / 1000) if rate else [float(int(time.time()))] * count
        env.insert_schedules(workflow, count, 3600, lambda index: utc(due[index]))
        pids = [worker.popen.pid for worker in env.workers]
        redis_pid = int(env.bench.redis.info("server")["process_id"])
        if rate:  # every link made before the window: it opens as the first comes due
            env.reconcile()
            time.sleep(max(0.0, due[0] - time.time()))
        before = sample(pids, redis_pid, env.bench.database)
        if not rate:
            env.reconcile()
        # Links of this workflow's schedules that finished (no-op links succeed), from their counters: the
        # same few rows read whatever history the database holds.
        finished = f"SELECT coalesce(sum(run_count), 0) FROM scheduled_jobs WHERE workflow_id = {int(workflow)}"
        time.sleep(max(0.0, due[-1] - time.time()))  # arriving: no reads of the database until the last is due
        wait_for(lambda: env.query(finished)[0][0] >= count, 60 + count / 5, interval=0.05,
                 what="the chain backlog")
        after = sample(pids, redis_pid, env.bench.database)
    finally:
        for worker in env.workers:
            worker.stop()
        env.workers = []
    return _difference(before, after, count)


def measure_bare(bench: Bench, workers: int, count: int, rate: float | None = None) -> dict[str, float]:
    return _measure_rq(bench, workers, count, None, rate)


def measure_durable(bench: Bench, workers: int, count: int, rate: float | None = None) -> dict[str, float]:
    """The durable baseline (bench.durable): each no-op job records its run, an INSERT and an UPDATE."""
    url = bench.scratch_database("durable-cpu")
    durable.create_table(url)
    return _measure_rq(bench, workers, count, url, rate)


def _measure_rq(bench: Bench, workers: int, count: int, url: str | None, rate: float | None) -> dict[str, float]:
    redis = bench.fresh_redis()
    processes = start_rq_workers(bench, workers, simple=True, durable=url)
    try:
        pids = [process.popen.pid for process in processes]
        redis_pid = int(redis.info("server")["process_id"])
        queue = Queue(BASELINE_QUEUE, connection=redis)
        before = sample(pids, redis_pid, bench.database)
        if url is None:
            jobs = [Queue.prepare_data(noop, result_ttl=300) for _ in range(count)]
        else:
            jobs = [Queue.prepare_data(durable.recorded_noop, args=(url,), result_ttl=300) for _ in range(count)]
        if rate:
            _feed(queue, jobs, arrivals(count, rate, 1.0))
        else:
            queue.enqueue_many(jobs)
        finished = FinishedJobRegistry(queue=queue)
        wait_for(lambda: finished.count >= count, 60 + count / 5, interval=0.05, what="the RQ backlog")
        after = sample(pids, redis_pid, bench.database)
    finally:
        stop_all(processes)
    return _difference(before, after, count)


def _feed(queue: Queue, jobs: list[Any], due: list[float]) -> None:
    """Enqueue each job at its time (those whose time has come, together, every few milliseconds)."""
    sent = 0
    while sent < len(jobs):
        time.sleep(max(0.0, min(due[sent] - time.time(), 0.005)))
        ready = bisect.bisect_right(due, time.time(), lo=sent)
        if ready > sent:
            queue.enqueue_many(jobs[sent:ready])
            sent = ready


DURABLE, LINK = "SimpleWorker, durable no-op job", "Recur default worker, link"  # the two the ratio compares


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cpu", description=__doc__.split("\n")[0])
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--count", type=int, default=1600)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--slots", type=int, default=None,
                        help="each worker's slots (recur worker --concurrency; default: the worker's own)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="measure each this many times, one after another in turn; medians are printed")
    parser.add_argument("--rate", type=float, default=None,
                        help="links and jobs arrive this many a second, each on time, instead of all at once")
    args = parser.parse_args(argv)
    if args.db == "postgres" and not postgres_available():
        parser.error("PostgreSQL's server binaries are not installed")
    slots = () if args.slots is None else ("--concurrency", str(args.slots))
    bench = Bench(Path(tempfile.mkdtemp(prefix="recur-cpu-")), args.db)
    measures: dict[str, Callable[[], dict[str, float]]] = {
        "bare RQ SimpleWorker, no-op job": lambda: measure_bare(bench, args.workers, args.count, args.rate),
        DURABLE: lambda: measure_durable(bench, args.workers, args.count, args.rate),
        LINK: lambda: measure_recur(bench, args.workers, args.count, *slots, rate=args.rate),
    }
    rounds: dict[str, list[dict[str, float]]] = {name: [] for name in measures}
    try:
        for index in range(args.rounds):
            for name, measure in measures.items():
                rounds[name].append(measure())
            ratio = _all(rounds[LINK][-1]) / _all(rounds[DURABLE][-1])
            print(f"round {index + 1}: link / durable job {ratio:.3f}", flush=True)
    finally:
        bench.stop()
    figures = {name: {role: statistics.median(one[role] for one in taken) for role in taken[0]}
               for name, taken in rounds.items()}
    roles = list(next(iter(figures.values())))
    arriving = f", arriving {args.rate:g} a second" if args.rate else ""
    print(f"CPU ms per job / link, {args.workers} workers ({args.slots or 'default'} slots), {args.count} each, "
          f"database {args.db}{arriving}" + (f", medians of {args.rounds} rounds" if args.rounds > 1 else ""))
    print(f"{'process':50}" + "".join(f"{name:>34}" for name in figures))
    for role in [*roles, "all"]:
        cells = [statistics.median(_all(one) for one in rounds[name]) if role == "all" else values[role]
                 for name, values in figures.items()]
        print(f"{role:50}" + "".join(f"{cell:>34.3f}" for cell in cells))
    ratios = [_all(link) / _all(job) for link, job in zip(rounds[LINK], rounds[DURABLE], strict=True)]
    print(f"link / durable job: median {statistics.median(ratios):.3f} (rounds: "
          + ", ".join(f"{ratio:.3f}" for ratio in ratios) + ")")
    return 0


def _all(values: dict[str, float]) -> float:
    return sum(values.values())


if __name__ == "__main__":
    raise SystemExit(main())

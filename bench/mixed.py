"""Scenario 9, mixed load: quick schedules (builtin.noop) beside slow ones (builtin.sleep, 5-30 s), as users run
a heartbeat next to a nightly export, through worker.py's slots and a queue of the slow workflow's own.

Each load row is a fresh deployment (real worker.py processes on the bench's redis-server and a fresh database);
the quick and the slow schedules' lateness (started_at - scheduled_for) are read from the runs in the window:
  baseline x N   the quick schedules alone, one worker.py --concurrency N
  mixed x N      with the slow ones, one worker.py --concurrency N: more slots than slow tasks at once, or fewer
  own queue      the slow workflow PATCHed (through gunicorn) onto queue "slow", served by its own
                 worker.py --queues slow --concurrency N; the quick ones by worker.py --queues recur, default slots
Then throughput per worker process with N slots beside bare RQ's `rq worker-pool -n N` on no-op jobs (the same
drain as scenario 1), and each worker's memory with its slots (RSS summed over its processes, and PSS, which
counts a page shared by forked processes once)."""

from __future__ import annotations

import http.client
import json
import math
import os
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from rq import Queue
from rq.registry import FinishedJobRegistry
from sqlalchemy import update

from bench.lateness import SETUP_SECONDS, steady_due
from bench.procfs import resident_mb, with_descendants
from bench.stack import BASELINE_QUEUE, Bench, RecurEnv, stop_all, utc, wait_workers, web
from bench.stats import lateness_summary, rate
from bench.tasks import noop
from bench.throughput import epoch_of
from harness.servers import Process, start_worker, wait_for
from harness.tokens import token_for_env
from recur_server.infra.config import Settings
from recur_server.infra.extensions import db
from recur_server.models import Schedule
from recur_server.workers.slots import default_concurrency

SLOW_QUEUE = "slow"


def slow_seconds(index: int, count: int, low: float, high: float) -> float:
    """Schedule i's task sleeps from `high` (the first, due first) down to `low` (the last) seconds, evenly: each
    ends after the last one starts, so at the peak every slow task runs at once."""
    return high if count < 2 else round(high - (high - low) * index / (count - 1), 1)


def pss_mb(pid: int) -> float | None:
    """A process's proportional set: a page shared by n processes counts 1/n in each (Linux 4.14+)."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def worker_memory(process: Process) -> dict[str, Any]:
    """A worker.py and every process under it (slots, work processes, its background process)."""
    pids = with_descendants(process.pid)
    rss = pss = 0.0
    for pid in pids:
        try:
            rss += resident_mb(pid)
        except (OSError, RuntimeError):
            continue
        pss += pss_mb(pid) or 0.0
    return {"processes": len(pids), "rss_mb": round(rss, 1), "pss_mb": round(pss, 1)}


def start_worker_process(env: RecurEnv, name: str, *args: str) -> Process:
    log = env.directory / f"{name}.log"
    process = start_worker(env.env, log, *args, "--name", f"bench-mixed-{name}")
    env.workers.append(process)  # env.stop() stops it
    return process


def concurrency_args(concurrency: int | None) -> list[str]:
    """No flag for None: the worker's default (RECUR_WORKER_CONCURRENCY), as the Procfile starts it."""
    return [] if concurrency is None else ["--concurrency", str(concurrency)]


def slots_of(env: RecurEnv, concurrency: int | None) -> int:
    return default_concurrency(env.app.config["RECUR_WORKER_CONCURRENCY"] if concurrency is None else concurrency)


def patch_queue(env: RecurEnv, workflow_id: int, queue: str) -> None:
    """PATCH the workflow onto `queue` through gunicorn, as a user would."""
    token = token_for_env(env.env)
    process, address = web(env.env, env.directory / "web.log")
    try:
        host, port = address.rsplit(":", 1)

        def patched() -> bool:
            if not process.alive():
                raise RuntimeError(process.output()[-2000:])
            connection = http.client.HTTPConnection(host, int(port), timeout=30)
            try:
                connection.request("PATCH", f"/api/v1/workflows/{workflow_id}/", body=json.dumps({"queue": queue}),
                                   headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
                response = connection.getresponse()
                body = response.read()
            except OSError:
                return False
            finally:
                connection.close()
            if response.status != 200:
                raise RuntimeError(f"PATCH workflow queue answered {response.status}: {body[:300]!r}")
            return True

        wait_for(patched, 60, interval=0.2, what="gunicorn to PATCH the workflow")
    finally:
        process.stop()


def _ticks(due: Callable[[int], float], count: int, interval: int, end: float) -> int:
    return sum(max(0, math.ceil((end - due(i)) / interval)) for i in range(count))


def _summary(runs: list[tuple[int, float, float, str, int | None]], workflow: int, start: float, end: float,
             due: int) -> dict[str, Any]:
    mine = [(nominal, started, status, ticks) for wf, nominal, started, status, ticks in runs
            if wf == workflow and start <= nominal < end]
    started = [(nominal, begun) for nominal, begun, status, _ in mine if status != "missed"]
    missed = sum(ticks or 1 for *_, status, ticks in mine if status == "missed")
    return {**lateness_summary(started), "due": due, "missed": missed,
            "not_started": max(0, due - len(started) - missed)}


def load(bench: Bench, spec: dict[str, Any], name: str, concurrency: int | None, slow: bool,
         own_queue: int | None = None, slow_count: int | None = None) -> dict[str, Any]:
    """One load row: the quick schedules, the slow ones beside them if `slow` (`slow_count` of them, or the
    spec's), on one worker.py with `concurrency` slots; or with `own_queue` slots for the slow workflow on its
    own queue and worker."""
    quick_count, quick_interval = spec["quick"]
    spec_slow_count, slow_interval = spec["slow"]
    slow_count = spec_slow_count if slow_count is None else slow_count
    low, high = spec["sleep"]
    env = bench.recur(f"mixed-{name}", **({"RECUR_QUEUES": SLOW_QUEUE} if own_queue else {}))
    try:
        quick_workflow = env.workflow()
        slow_workflow = env.workflow("builtin.sleep")
        if own_queue:
            patch_queue(env, slow_workflow, SLOW_QUEUE)
            workers = [start_worker_process(env, "slow", "--queues", SLOW_QUEUE, *concurrency_args(own_queue)),
                       start_worker_process(env, "quick", "--queues", "recur", *concurrency_args(concurrency))]
        else:
            workers = [start_worker_process(env, "worker", *concurrency_args(concurrency))]
        wait_workers(bench.redis, len(workers), workers, timeout=120)  # each starts with one slot
        start = math.ceil(time.time()) + SETUP_SECONDS
        end = start + spec["seconds"]
        quick_due = steady_due(quick_count, quick_interval, start)
        env.insert_schedules(quick_workflow, quick_count, quick_interval, lambda i: utc(quick_due(i)))

        def slow_due(index: int) -> float:  # spread over slow_spread seconds (one a second in the full run)
            return start + round(float(spec["slow_spread"]) * index / max(1, int(slow_count)), 3)

        if slow:
            env.insert_schedules(slow_workflow, slow_count, slow_interval, lambda i: utc(slow_due(i)))
            with env.context():
                for index in range(slow_count):
                    db.session.execute(
                        update(Schedule)
                        .where((Schedule.workflow_id == slow_workflow) & (Schedule.name == f"bench-{index}"))
                        .values(trigger_payload={"seconds": slow_seconds(index, slow_count, low, high)},
                                queue=SLOW_QUEUE if own_queue else None))
                db.session.commit()
        env.reconcile()
        setup_overran = time.time() > start
        time.sleep(max(0.0, end - time.time()))
        memory = {worker.log_path.stem: worker_memory(worker) for worker in workers}
        quick_expected = _ticks(quick_due, quick_count, quick_interval, end)
        slow_expected = _ticks(slow_due, slow_count, slow_interval, end) if slow else 0
        expected = quick_expected + slow_expected

        def in_window() -> list[tuple[int, float, float, str, int | None]]:
            rows = [(int(wf), parse_instant(nominal), parse_instant(started), status, ticks)
                    for wf, nominal, started, status, ticks
                    in env.query("SELECT s.workflow_id, r.scheduled_for, r.started_at, r.status, r.ticks FROM runs r "
                                        "JOIN scheduled_jobs s ON s.id = r.schedule_id")]
            return [entry for entry in rows if start <= entry[1] < end]

        deadline = time.monotonic() + spec["drain"]
        runs = in_window()
        while time.monotonic() < deadline and len(runs) < expected:
            time.sleep(1.0)
            runs = in_window()
    finally:
        env.stop()
    result: dict[str, Any] = {
        "concurrency": slots_of(env, concurrency), "own_queue": own_queue, "slow": slow, "slow_count": slow_count,
        "quick": _summary(runs, quick_workflow, start, end, quick_expected),
        "memory": memory, "setup_overran": setup_overran,
    }
    if slow:
        result["slow_runs"] = _summary(runs, slow_workflow, start, end, slow_expected)
    return result


def parse_instant(stored: str | datetime) -> float:
    """A timestamp as the database returns it (SQLite: naive-UTC text; PostgreSQL: a datetime), as epoch
    seconds."""
    value = datetime.fromisoformat(stored) if isinstance(stored, str) else stored
    instant: datetime = value if value.tzinfo else value.replace(tzinfo=UTC)
    return instant.timestamp()


# --- d) throughput per worker process with N slots, beside bare RQ's worker-pool -----------------------------


def recur_slots_throughput(bench: Bench, slots: int, count: int) -> dict[str, Any]:
    """`count` quick schedules all due at once, drained by one worker.py --concurrency `slots` (as scenario 1
    drains its backlog)."""
    env = bench.recur(f"mixed-throughput-x{slots}")
    try:
        workflow = env.workflow()
        worker = start_worker_process(env, f"throughput-x{slots}", *concurrency_args(slots))
        wait_workers(bench.redis, 1, [worker], timeout=120)  # one slot first, the rest as the backlog fills it
        due = time.time() + 1.0
        env.insert_schedules(workflow, count, 3600, lambda _: utc(int(due)))
        env.reconcile()
        wait_for(lambda: env.finished_runs() >= count, 60 + count / 5, interval=0.5, what="the chain backlog")
        memory = worker_memory(worker)
        runs = env.runs()
    finally:
        env.stop()
    per_second = rate([started for _, started, _ in runs])
    return {"fires": len(runs), "per_second": round(per_second, 1), "memory": memory}


def rq_pool_throughput(bench: Bench, slots: int, count: int, worker_class: str | None = None) -> dict[str, Any]:
    """The same number of no-op jobs through bare RQ's `rq worker-pool -n slots` (its Worker, forking a work
    horse per job, unless `worker_class`) on the same Redis."""
    redis = bench.fresh_redis()
    rq = str(Path(sys.executable).parent / "rq")
    argv = [rq, "worker-pool", "-u", bench.redis_server.url, "-n", str(slots), "-l", "INFO",
            *(["-w", worker_class] if worker_class else []), BASELINE_QUEUE]
    pool = Process(argv, {}, bench.log(f"rq-worker-pool-x{slots}"))
    try:
        wait_workers(redis, slots, [pool], timeout=120)
        queue = Queue(BASELINE_QUEUE, connection=redis)
        ids = [job.id for job in queue.enqueue_many([Queue.prepare_data(noop, result_ttl=300)
                                                     for _ in range(count)])]
        finished = FinishedJobRegistry(queue=queue)
        wait_for(lambda: finished.count >= len(ids), 60 + len(ids) / 5, interval=0.5, what="the RQ backlog")
        memory = worker_memory(pool)
        with redis.pipeline(transaction=False) as pipe:
            for job_id in ids:
                pipe.hget(f"rq:job:{job_id}", "started_at")
            starts = [epoch_of(started.decode()) for started in pipe.execute()]
    finally:
        stop_all([pool])
    return {"jobs": len(starts), "per_second": round(rate(starts), 1), "memory": memory}


# --- the scenario ------------------------------------------------------------------------------------------


def recur(bench: Bench, spec: dict[str, Any], say: Callable[[str], None]) -> dict[str, Any]:
    """Every row of the scenario; a row that fails is reported with its error, the others still run."""

    def measured(what: str, fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        say(f"  9 mixed: {what}")
        try:
            result = fn()
        except Exception as exc:  # reported, never a number
            result = {"error": f"{type(exc).__name__}: {exc}"[:300]}
        say(f"    -> {result}")
        return result

    runs: list[tuple[str, str, Callable[[], dict[str, Any]]]] = []
    # The baseline on a default worker first, then the row judged against it, so that the drift of a shared
    # machine's other load hits both alike.
    for concurrency in sorted(spec["baseline"], key=lambda c: c is not None):
        runs.append((f"baseline x{concurrency or 'default'}",
                     f"quick schedules alone, one worker x{concurrency or 'default'}",
                     partial(load, bench, spec, f"baseline-x{concurrency}", concurrency, slow=False)))
    # The own-queue row is judged against the same two workers with no slow task to run: what the slow tasks
    # cost the quick ones once on a queue of their own, apart from what a second worker.py costs on the machine.
    runs[1:1] = [
        ("own queue alone", f"quick alone, beside an idle worker x{spec['own_queue']} on queue {SLOW_QUEUE!r}",
         partial(load, bench, spec, "own-queue-alone", None, slow=False, own_queue=spec["own_queue"])),
        ("own queue", f"slow on queue {SLOW_QUEUE!r} with its own worker x{spec['own_queue']}, quick on a default "
         "worker", partial(load, bench, spec, "own-queue", None, slow=True, own_queue=spec["own_queue"])),
    ]
    for concurrency in spec["mixed"]:
        runs.append((f"mixed x{concurrency or 'default'}", f"quick beside slow, one worker x{concurrency or 'default'}",
                     partial(load, bench, spec, f"mixed-x{concurrency}", concurrency, slow=True)))
    if spec.get("few_slow"):
        # The default worker (the Procfile's) with one slow task fewer than its slots: the target's own case.
        few = default_concurrency(Settings.from_env(dict(os.environ)).RECUR_WORKER_CONCURRENCY) - 1
        runs.append(("few slow x default", f"{few} slow beside the quick ones, one worker x default",
                     partial(load, bench, spec, "few-slow-default", None, slow=True, slow_count=few)))
    loads = {key: measured(what, fn) for key, what, fn in runs}
    throughput: dict[str, Any] = {}
    count = spec["throughput_count"]
    for slots in spec["throughput_slots"]:
        throughput[f"x{slots}"] = {
            "recur": measured(f"throughput: worker.py --concurrency {slots}, {count} fires",
                              partial(recur_slots_throughput, bench, slots, count)),
            "rq_pool": measured(f"throughput: rq worker-pool -n {slots}, {count} no-op jobs",
                                partial(rq_pool_throughput, bench, slots, count)),
            "rq_pool_simple": measured(f"throughput: rq worker-pool -n {slots} -w rq.SimpleWorker, {count} jobs",
                                       partial(rq_pool_throughput, bench, slots, count, "rq.SimpleWorker")),
        }
    return {**{key: spec[key] for key in ("quick", "slow", "sleep", "seconds")}, "loads": loads,
            "throughput": throughput}

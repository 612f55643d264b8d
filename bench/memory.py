"""Scenario 7: does a worker leak? One worker.py, kept busy by a backlog (schedules at a 1 s interval, more
than it can run), and its resident set after a first and a last number of links."""

from __future__ import annotations

import time
from typing import Any

from bench.procfs import children, resident_mb, stat
from bench.stack import Bench, utc
from harness.servers import wait_for


def work_process(pid: int) -> int | None:
    """The isolating worker's work process: its child that leads a process group of its own."""
    for child in children(pid):
        try:
            if stat(child)[2] == str(child):
                return child
        except (OSError, IndexError):
            continue
    return None


def recur(bench: Bench, schedules: int, marks: list[int], mode: str = "default") -> dict[str, Any]:
    env = bench.recur("memory")
    try:
        workflow = env.workflow()
        # One slot, so that the worker.py process is the RQ worker and its child the work process: a leak
        # is a slot's, and every slot runs the same loop (with slots, worker.py only supervises them).
        env.start_workers(1, mode, "--concurrency", "1")
        due = int(time.time()) + 2
        env.insert_schedules(workflow, schedules, 1, lambda _: utc(due))
        env.reconcile()
        pid = env.workers[0].pid
        sql = "SELECT count(*) FROM runs WHERE status = 'succeeded'"
        seen: list[dict[str, Any]] = []
        started = time.monotonic()
        for mark in marks:
            def reached(m: int = mark) -> bool:
                return int(env.query(sql)[0][0]) >= m

            wait_for(reached, 120 + mark / 20, interval=0.5, what=f"{mark} links")
            child = wait_for(lambda: work_process(pid), 5, interval=0.02, what="the work process (being replaced?)")
            seen.append({"links": int(env.query(sql)[0][0]), "worker_rss_mb": resident_mb(pid),
                         "work_process_rss_mb": resident_mb(child) if child else None,
                         "seconds": round(time.monotonic() - started, 1)})
    finally:
        env.stop()
    first, last = seen[0], seen[-1]
    return {"marks": seen, "first_rss_mb": first["worker_rss_mb"], "last_rss_mb": last["worker_rss_mb"],
            "ratio": round(last["worker_rss_mb"] / first["worker_rss_mb"], 3)}

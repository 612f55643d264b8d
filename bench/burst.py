"""Scenario 6: schedules created the way a script creates them, all in one burst through the API (gunicorn
as in the Procfile, several clients at once), at one interval: each round of them comes due within the
span the burst took, and the measure is how long after the round's first due time its last run started,
beside the floor that throughput sets (count ÷ the fires per second measured in the same run)."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bench.api import Client, _ready
from bench.stack import Bench, _epoch, web
from bench.stats import percentile
from harness.servers import wait_for
from harness.tokens import token_for_env

CLIENTS = 8  # as many as the Procfile's gunicorn answers at once (2 workers x 4 threads)


def recur(bench: Bench, count: int, interval: int, rounds: int, workers: int) -> dict[str, Any]:
    env = bench.recur("burst")
    token = token_for_env(env.env)
    process, address = web(env.env, env.directory / "web.log")
    try:
        wait_for(lambda: _ready(address, token) or not process.alive(), 60, interval=0.1, what="gunicorn")
        if not process.alive():
            raise RuntimeError(process.output()[-2000:])
        env.start_workers(workers)
        client = Client(address, token)
        status, workflow, _ = client.call("POST", "/api/v1/workflows/", {"name": "noop", "task": "builtin.noop"})
        client.close()
        assert status == 201, workflow
        started = time.monotonic()
        _create(address, token, workflow["id"], count, interval)
        create_seconds = time.monotonic() - started
        last = rounds - 1
        sql = f"SELECT count(*) FROM runs WHERE repeat_number = {last} AND status != 'running'"
        wait_for(lambda: int(env.query(sql)[0][0]) >= count, interval * rounds + 60 + count / 5, interval=0.5,
                 what=f"round {rounds} of the burst")
        rows = env.query(f"SELECT repeat_number, scheduled_for, started_at FROM runs "
                         f"WHERE retry_number = 0 AND repeat_number <= {last}")
    finally:
        process.stop()
        env.stop()
    summary = []
    for round_ in range(rounds):
        pairs = [(_epoch(nominal), _epoch(start)) for repeat, nominal, start in rows if repeat == round_]
        first_due = min(nominal for nominal, _ in pairs)
        late = [start - nominal for nominal, start in pairs]
        summary.append({
            "round": round_ + 1, "runs": len(pairs),
            "due_spread_seconds": round(max(nominal for nominal, _ in pairs) - first_due, 3),
            "drain_seconds": round(max(start for _, start in pairs) - first_due, 3),
            "lateness_p99_ms": round(percentile(late, 99) * 1000, 1), "lateness_max_ms": round(max(late) * 1000, 1),
            "early": sum(1 for x in late if x < 0),
        })
    return {"count": count, "interval": interval, "workers": workers, "create_seconds": round(create_seconds, 2),
            "rounds": summary}


def _create(address: str, token: str, workflow_id: int, count: int, interval: int) -> None:
    def create(indexes: range) -> None:
        client = Client(address, token)
        try:
            for index in indexes:
                status, payload, _ = client.call("POST", "/api/v1/schedules/", {
                    "name": f"burst-{index}", "workflow_id": workflow_id, "interval_seconds": interval})
                if status != 201:
                    raise RuntimeError(f"create answered {status}: {payload}")
        finally:
            client.close()

    with ThreadPoolExecutor(CLIENTS) as pool:
        for future in [pool.submit(create, range(start, count, CLIENTS)) for start in range(CLIENTS)]:
            future.result()

"""`python -m bench.handoff`: what one hand-off (putting a successor link) costs while links are queued.

When many links fall due at once (a midnight cron on every schedule), the queue holds a backlog and each
run hands off its successor meanwhile. This puts 1,000 new links beside a backlog of 0, 3,000 and 100,000
queued IDs on its own redis-server and prints the client's time and Redis's own time per put (from
INFO commandstats): a put that read the whole queue would grow with the backlog.
"""

from __future__ import annotations

import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from redis import Redis
from rq import Queue

from bench.stack import Bench
from recur_server.chain.redis_links import LinkPlan, put_link

BACKLOGS = (0, 3_000, 100_000)
PUTS = 1_000


def measure(bench: Bench, backlog: int) -> tuple[float, float]:
    """(client µs, Redis µs) per put of a new link beside `backlog` queued IDs."""
    redis: Redis = bench.fresh_redis()
    queue = Queue("recur", connection=redis)
    for start in range(0, backlog, 10_000):
        redis.rpush(queue.key, *[f"sched-backlog{i}-n0-rc0" for i in range(start, min(backlog, start + 10_000))])
    now = datetime.now(UTC)
    plans = [LinkPlan(str(uuid.uuid4()), 0, 1, 0, now, now, 600) for _ in range(PUTS)]
    redis.config_resetstat()
    started = time.perf_counter()
    for plan in plans:
        put_link(queue, plan)
    client = (time.perf_counter() - started) / PUTS * 1e6
    server = float(redis.info("commandstats")["cmdstat_eval"]["usec_per_call"])
    return client, server


def main() -> None:
    bench = Bench(Path(tempfile.mkdtemp(prefix="recur-handoff-")))
    try:
        print(f"{'queued links':>12}  {'client us/put':>13}  {'Redis us/put':>12}")
        for backlog in BACKLOGS:
            client, own = measure(bench, backlog)
            print(f"{backlog:>12,}  {client:>13.1f}  {own:>12.1f}")
    finally:
        bench.stop()


if __name__ == "__main__":
    main()

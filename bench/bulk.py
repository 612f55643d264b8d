"""`python -m bench.bulk`: a big estate made in one request (issue 51, item 5), through gunicorn as the
Procfile runs it, each request on a fresh database:

- POST /apply/ with `--count` cron schedules (hourly and daily, by workflow name);
- POST /apply/file/ with the same as a file of keyed schedules (what `recur apply` sends: planned against the
  owner's schedules first, then made).

For each: the request's wall time, the peak resident memory of the web process that served it, and the
links pending in Redis afterwards (every schedule's first link, put after the commit)."""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from redis import Redis

from bench.api import Client, serving
from bench.procfs import children, resident_mb
from bench.stack import Bench, postgres_available
from recur_server.chain.redis_links import SCHEDULED_PREFIX


def schedules(count: int) -> list[dict[str, Any]]:
    """`count` keyed schedules: nine in ten hourly, one in ten daily, their minutes spread."""
    return [{"key": f"s{i:07d}", "name": f"s{i:07d}", "workflow": "w",
             "cron": f"{i % 60} * * * *" if i % 10 else f"{i % 60} {i % 24} * * *"} for i in range(count)]


def measure(bench: Bench, path: str, count: int) -> dict[str, Any]:
    env = bench.recur("bulk", RECUR_MAX_SCHEDULES_PER_OWNER=str(2 * count))
    try:
        with serving(env) as (process, address, token):
            client = Client(address, token, timeout=600)
            status, answer, _ = client.call("POST", "/api/v1/workflows/", {"name": "w", "task": "builtin.noop"})
            assert status == 201, answer
            made = schedules(count)
            body = {"schedules": {"create": made}} if path == "/api/v1/apply/" else {"file": {"schedules": made}}
            size = len(json.dumps(body))
            status, answer, elapsed = client.call("POST", path, body)
            client.close()
            if status != 200:
                raise RuntimeError(f"{path}: {status} {str(answer)[:500]}")
            peak = max(resident_mb(pid, "VmHWM") for pid in children(process.pid))
        pending = Redis.from_url(bench.redis_server.url).zcard(SCHEDULED_PREFIX + "recur")
        return {"path": path, "count": count, "body_mb": round(size / 2**20, 1), "seconds": round(elapsed, 2),
                "per_schedule_ms": round(1000 * elapsed / count, 3), "web_peak_mb": peak, "links_pending": pending}
    finally:
        env.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bulk", description=__doc__.split("\n")[0])
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args(argv)
    if args.db == "postgres" and not postgres_available():
        parser.error("PostgreSQL's server binaries are not installed")
    bench = Bench(Path(tempfile.mkdtemp(prefix="recur-bulk-")), args.db)
    figures: list[dict[str, Any]] = []
    started = time.time()
    try:
        for path in ("/api/v1/apply/", "/api/v1/apply/file/"):
            figures.append(measure(bench, path, args.count))
            print(json.dumps({"db": args.db, **figures[-1]}), flush=True)
    finally:
        bench.stop()
    if args.json:
        Path(args.json).write_text(json.dumps({"db": args.db, "started": started, "figures": figures}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

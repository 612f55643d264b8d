"""Running totals of the reconciler's passes and repairs, kept in Redis: written by each pass
(recur_server.workers.background), read by the health endpoint, the console and anyone with redis-cli."""

from __future__ import annotations

from redis import Redis

from recur_server.infra import clock

STATS_KEY = "recur:stats"


def count_pass(redis: Redis, report: dict[str, object]) -> None:
    """Add one reconciliation pass's report (recur_server.services.reconcile.Report.as_dict, with its seconds)
    to the totals."""
    with redis.pipeline(transaction=False) as pipe:
        pipe.hincrby(STATS_KEY, "reconcile_passes", 1)
        pipe.hincrby(STATS_KEY, "reconcile_sweeps", 1 if report.get("sweep", True) else 0)
        pipe.hincrby(STATS_KEY, "links_repaired", int(str(report["links_repaired"])))
        pipe.hincrby(STATS_KEY, "runs_written_off", int(str(report["runs_written_off"])))
        pipe.hincrby(STATS_KEY, "schedules_invalidated", int(str(report["schedules_invalidated"])))
        pipe.hset(STATS_KEY, mapping={"last_pass_at": clock.utcnow().isoformat(),
                                      "last_pass_seconds": str(report["seconds"])})
        pipe.execute()


def read_stats(redis: Redis) -> dict[str, str]:
    raw: dict[bytes, bytes] = redis.hgetall(STATS_KEY)  # type: ignore[assignment]
    return {key.decode(): value.decode() for key, value in raw.items()}

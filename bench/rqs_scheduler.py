"""rq-scheduler's scheduler process for the baselines: `python -m bench.rqs_scheduler URL QUEUE POLL_SECONDS`.

Stock rq-scheduler, except that it writes each job's due time into the job's meta as it moves it
(the job is saved by that same move, so this adds no Redis round trip): its interval jobs re-schedule
themselves from "now", so the due time cannot be known from outside.
"""

from __future__ import annotations

import argparse
import logging

from redis import Redis
from rq_scheduler import Scheduler
from rq_scheduler.utils import to_unix


class StampingScheduler(Scheduler):  # type: ignore[misc]  # rq-scheduler ships no types
    def enqueue_jobs(self):  # type: ignore[no-untyped-def]
        jobs = list(self.get_jobs_to_queue(with_times=True))
        for job, due in jobs:
            job.meta["bench_due"] = to_unix(due)
            self.enqueue_job(job)
        return [job for job, _ in jobs]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("queue")
    parser.add_argument("poll", type=float)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    scheduler = StampingScheduler(queue_name=args.queue, connection=Redis.from_url(args.url), interval=args.poll)
    scheduler.run()


if __name__ == "__main__":
    main()

"""A bare RQ worker for the baselines: `python -m bench.rq_worker URL QUEUE [--simple] [--scheduler]`.

Same logging level as Recur's worker.py, so that both pay the same per-job log lines.
"""

from __future__ import annotations

import argparse
import logging

from redis import Redis
from rq import Queue, SimpleWorker, Worker


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("queue")
    parser.add_argument("--simple", action="store_true")
    parser.add_argument("--scheduler", action="store_true", help="run RQ's built-in scheduler (with_scheduler)")
    parser.add_argument("--durable", metavar="DATABASE_URL", default=None,
                        help="open the durable baseline's connection to this database before the first job")
    args = parser.parse_args()
    if args.durable:
        from bench.durable import warm_up

        warm_up(args.durable)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    connection = Redis.from_url(args.url)
    worker_class = SimpleWorker if args.simple else Worker
    worker = worker_class([Queue(args.queue, connection=connection)], connection=connection)
    worker.work(with_scheduler=args.scheduler, logging_level="INFO")


if __name__ == "__main__":
    main()

"""Recur's background process on its own, for workers that `rq worker -w rq_worker.Worker` runs (worker.py
forks its own): moves due links onto their queues the moment they are due, reconciles every
RECUR_RECONCILE_SECONDS, delivers webhooks and missed-run alerts, starts parked manual and backfill runs,
and prunes history past its retention. Until SIGTERM or SIGINT.

    python background.py

Any number may run: the movers take each link once (one Lua script), reconciling and pruning take a Redis
lock, deliveries claim each one in the database. Run two, on two hosts, so that links keep moving while one
restarts; with none running, links due later wait in Redis (docs/operations.md).
"""

from __future__ import annotations

import logging

from recur.host_metrics import use_host_directory

use_host_directory()  # before app imports prometheus-client

from recur_server import create_app  # noqa: E402
from recur_server.services.schema import ensure_schema  # noqa: E402
from recur_server.workers.background import background_process_main  # noqa: E402

log = logging.getLogger("recur.background")


def main() -> None:
    app = create_app()
    ensure_schema(app)
    log.info("background process running: moving due links, reconciling, delivering, pruning")
    background_process_main(app, None, at_start=True)  # its startup pass beside its mover


if __name__ == "__main__":
    main()

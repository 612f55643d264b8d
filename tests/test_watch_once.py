"""The watch's checks (late schedules, long runs, queues without a live worker) run once a period across the
cluster, whichever process's pass comes first, not once in each process's pass; every pass still delivers the
webhooks due (on fakeredis and on a real redis-server)."""

from __future__ import annotations

import time
from datetime import datetime

from flask import Flask

from recur_server.notify import alerts, delivery, long_runs, watch, workers_gone


def test_the_checks_run_once_a_period_and_deliveries_every_pass(chain_app: Flask, monkeypatch) -> None:
    checked: list[str] = []
    delivered: list[datetime] = []
    for name, module in (("alerts", alerts), ("long_runs", long_runs), ("workers_gone", workers_gone)):
        monkeypatch.setattr(module, "check", lambda now, name=name: checked.append(name))
    monkeypatch.setattr(delivery, "deliver_due", delivered.append)
    chain_app.config["RECUR_WATCH_SECONDS"] = 0.5

    for _ in range(3):  # three processes' passes within a period: the first one checks
        watch.watch_once(chain_app)
    assert checked == ["alerts", "long_runs", "workers_gone"]
    assert len(delivered) == 3

    time.sleep(0.6)  # the next period: the next pass checks again
    watch.watch_once(chain_app)
    watch.watch_once(chain_app)
    assert checked == ["alerts", "long_runs", "workers_gone"] * 2
    assert len(delivered) == 5

"""`flask recover` runs a reconciliation pass under the same lock as the workers' passes."""

from __future__ import annotations

import json

from harness.chain_driver import make_schedule, scheduled_ids
from recur_server.chain.ids import link_id
from recur_server.infra.extensions import get_redis
from recur_server.services.reconcile_stats import read_stats
from recur_server.workers.background import RECONCILE_LOCK


def test_recover_runs_no_pass_while_another_process_reconciles(real_app, fake_clock):
    redis = get_redis(real_app)
    make_schedule(fake_clock.now, interval_seconds=10)
    redis.flushall()  # the link is missing: a pass would re-create it
    redis.set(RECONCILE_LOCK, "a-worker", px=10_000)
    result = real_app.test_cli_runner().invoke(args=["recover"])
    assert result.exit_code == 1, result.output
    assert "another process is reconciling" in result.output
    assert scheduled_ids(real_app) == []
    assert redis.get(RECONCILE_LOCK) == b"a-worker"  # left alone


def test_recover_takes_the_lock_and_prints_the_report(real_app, fake_clock):
    redis = get_redis(real_app)
    schedule = make_schedule(fake_clock.now, interval_seconds=10)
    redis.flushall()
    result = real_app.test_cli_runner().invoke(args=["recover"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert (report["checked"], report["links_repaired"], report["runs_written_off"]) == (1, 1, 0)
    assert scheduled_ids(real_app) == [link_id(schedule.id, 0, 0)]
    assert not redis.exists(RECONCILE_LOCK)  # released
    assert read_stats(redis)["reconcile_passes"] == "1"  # counted like the workers' passes

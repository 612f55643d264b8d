"""`flask declarations sync` whole or not at all (SQLite and PostgreSQL): a sync whose last step is refused keeps
nothing of the steps before it, in the database or in Redis; its dry run meets the same refusal; and what it
syncs carries the workers' warnings."""

from __future__ import annotations

import pytest
from redis import Redis
from sqlalchemy import select

from harness import declared_tasks
from harness.declaring import declare_both, no_declarations  # noqa: F401  (no_declarations: autouse here)
from harness.servers import free_port
from recur_server.auth.models import ScheduleEvent
from recur_server.chain.redis_links import scheduled_key
from recur_server.declarations.marks import DeclaredKey
from recur_server.declarations.sync import sync
from recur_server.infra.extensions import db, get_queue, get_redis
from recur_server.models import Schedule, Workflow
from recur_server.tasks import declarations


def _counts() -> tuple[int, int, int, int]:
    counted = (len(db.session.scalars(select(Schedule)).all()), len(db.session.scalars(select(Workflow)).all()),
               len(db.session.scalars(select(DeclaredKey)).all()), len(db.session.scalars(select(ScheduleEvent)).all()))
    db.session.rollback()
    return counted


def test_a_sync_whose_last_step_is_refused_changes_nothing_and_its_dry_run_says_so(app):
    """Whole or nothing: the owner may hold two schedules; three declarations plan three creates. The third
    is refused by the quota, which only the write itself meets, and the two before it are not kept: no
    schedule, workflow, mark or audit row, no link in Redis. The dry run carries the steps out with the same
    checks and meets the same refusal."""
    app.config["RECUR_MAX_SCHEDULES_PER_OWNER"] = 2
    declare_both()
    declarations.declare(declared_tasks.no_arguments, {"every": "1h"}, key="zz-third")  # planned last
    before = _counts()
    with pytest.raises(declarations.DeclarationError, match="'zz-third'.*schedules"):
        sync(app, dry_run=True)
    with pytest.raises(declarations.DeclarationError, match="'zz-third'.*schedules"):
        sync(app)
    assert _counts() == before == (0, 0, 0, 0)
    assert get_redis().zrange(scheduled_key(get_queue()), 0, -1) == []
    app.config["RECUR_MAX_SCHEDULES_PER_OWNER"] = 3
    outcome = sync(app)
    assert outcome.plan is not None and outcome.plan.count("create") == 3
    assert _counts()[:3] == (3, 3, 3)
    assert len(get_redis().zrange(scheduled_key(get_queue()), 0, -1)) == 3  # handed off after the one commit
    # No worker beats here: the sync says so of each schedule it made (a warning: workers may come after).
    assert outcome.warnings == [f"{key}: no live worker listens on queue 'recur': this schedule's runs wait "
                                "until one starts" for key in ("reports-42", "tick-cron", "zz-third")]
    assert outcome.lines()[-1] == f"warning: {outcome.warnings[-1]}"


def test_a_sync_with_redis_away_says_so_and_changes_nothing(app):
    """A sync, and its dry run (which carries the steps out), need Redis: the command says it cannot be reached
    (status 1, no traceback) and nothing is written."""
    declare_both()
    app.extensions["recur.redis"] = Redis.from_url(f"redis://127.0.0.1:{free_port()}/0", socket_timeout=1,
                                                   socket_connect_timeout=1)
    runner = app.test_cli_runner()
    for args in (["--dry-run"], []):
        result = runner.invoke(args=["declarations", "sync", *args])
        assert result.exit_code == 1, result.output
        assert "Redis is unreachable" in result.output and "Traceback" not in result.output, result.output
    assert _counts() == (0, 0, 0, 0)

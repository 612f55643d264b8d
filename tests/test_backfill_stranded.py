"""A backfill is never left `running` with none of its runs on the way: the API's 503 changes nothing, and
a backfill whose next run was lost (its process died between the commit and the enqueue, or Redis lost
its job) is taken up by the reconciler and runs to the end."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from redis import Redis
from rq import SimpleWorker
from sqlalchemy import func, select

from harness.chain_driver import make_schedule
from harness.servers import free_port
from harness.tokens import authorized_client, token_for_app
from recur_server.infra.extensions import connect_redis, db, get_queue, get_redis
from recur_server.models import Backfill, Run
from recur_server.services.outside_runs.backfills import backfill_run_id, continue_backfill, start_backfill
from recur_server.services.reconcile import reconcile

HOUR = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _unreachable() -> Redis:
    return connect_redis(f"redis://127.0.0.1:{free_port()}/0")


def _work(app, max_jobs: int | None = None) -> None:
    SimpleWorker([get_queue(app)], connection=get_redis(app)).work(burst=True, with_scheduler=False,
                                                                    max_jobs=max_jobs)
    db.session.remove()


def _backfill(backfill_id: str) -> tuple[str, int]:
    backfill = db.session.get(Backfill, backfill_id, populate_existing=True)
    assert backfill is not None
    done = db.session.scalar(select(func.count()).select_from(Run).where(
        (Run.backfill_id == backfill_id) & (Run.status == "succeeded")))
    db.session.rollback()
    return backfill.status, int(done or 0)


def _committed_backfill(count: int) -> tuple[str, list[datetime]]:
    """A running backfill of a ten-minute cron's first `count` times from HOUR, committed and not started:
    its id and its times."""
    schedule = make_schedule(datetime.now(UTC), cron="*/10 * * * *")
    times = [HOUR + timedelta(minutes=10 * i) for i in range(count)]
    backfill = Backfill(schedule_id=schedule.id, start_at=HOUR, end_at=HOUR + timedelta(minutes=10 * count),
                        overlap=None, times=[t.isoformat() for t in times], total=count, started=0,
                        status="running", created_at=datetime.now(UTC))
    db.session.add(backfill)
    db.session.commit()
    return backfill.id, times


def test_a_backfill_asked_for_while_redis_is_away_is_refused_and_leaves_nothing(real_app):
    client = authorized_client(real_app, token_for_app(real_app))
    schedule = make_schedule(datetime.now(UTC), cron="*/10 * * * *")
    reachable = get_redis(real_app)
    real_app.extensions["recur.redis"] = _unreachable()
    answer = client.post(f"/api/v1/schedules/{schedule.id}/backfill/",
                         json={"start": HOUR.isoformat(), "end": (HOUR + timedelta(hours=1)).isoformat()})
    assert answer.status_code == 503 and "nothing was changed" in answer.json["message"]
    assert db.session.scalar(select(func.count()).select_from(Backfill)) == 0  # as the answer says
    real_app.extensions["recur.redis"] = reachable


def test_a_backfill_whose_next_run_was_lost_is_taken_up_by_the_reconciler(real_app):
    # What start_backfill commits, with the process gone before it enqueued the first run.
    backfill_id, times = _committed_backfill(6)
    _work(real_app)
    assert _backfill(backfill_id) == ("running", 0)  # nothing on the way: only the reconciler can start it

    reconcile(datetime.now(UTC))
    _work(real_app, max_jobs=2)  # the first run, and the second
    assert _backfill(backfill_id) == ("running", 2)
    get_redis(real_app).flushall()  # Redis loses the third run's job (restarted empty)
    reconcile(datetime.now(UTC))
    reconcile(datetime.now(UTC))  # twice: still one third run
    _work(real_app)
    assert _backfill(backfill_id) == ("done", 6)
    runs = db.session.scalars(select(Run).where(Run.backfill_id == backfill_id).order_by(Run.started_at)).all()
    assert [r.scheduled_for for r in runs] == times  # each once, in order


def test_a_backfill_goes_on_once_per_ended_run_however_many_processes_see_it_end(real_app):
    """The run's own job and a reconciler pass that saw the same run end both go on from it: the backfill
    starts its next run once, and never skips one (the race left 15:10 to run after 15:20, and the
    backfill done with its last run never run)."""
    backfill_id, times = _committed_backfill(3)
    start_backfill(backfill_id)
    _work(real_app, max_jobs=1)  # the first run ends; its job goes on to the second
    assert _backfill(backfill_id) == ("running", 1)
    continue_backfill(backfill_id, backfill_run_id(backfill_id, 0), datetime.now(UTC))  # a pass that saw it end
    continue_backfill(backfill_id, backfill_run_id(backfill_id, 0), datetime.now(UTC))
    current = db.session.get(Backfill, backfill_id, populate_existing=True)
    assert current is not None and current.started == 1
    db.session.rollback()
    _work(real_app)
    assert _backfill(backfill_id) == ("done", 3)
    runs = db.session.scalars(select(Run).where(Run.backfill_id == backfill_id).order_by(Run.started_at)).all()
    assert [r.scheduled_for for r in runs] == times

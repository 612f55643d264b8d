"""A Celery app with a beat_schedule as a team writes one (`celery -A harness.legacy_celery beat`), for
`recur import celery-beat` (tests/test_import_from_code.py): seconds, a timedelta and crontabs in the app's
zone, args and kwargs, options (expires, queue, priority), a task's time limit, and entries that cannot be
mapped (solar, a bound task, a task the app does not have). Nothing here connects to a broker."""

from datetime import timedelta

from celery import Celery
from celery.schedules import crontab, solar

from harness.legacy_jobs import record

app = Celery("legacy")
app.conf.timezone = "Europe/Paris"


@app.task
def mail_digest(account_id: int, dry_run: bool = False) -> None:
    record("mail_digest", account_id, dry_run=dry_run)


@app.task(time_limit=45)
def rebuild_index() -> None:
    record("rebuild_index")


@app.task(bind=True)
def bound(self) -> None:  # type: ignore[no-untyped-def]
    record("bound")


app.conf.beat_schedule = {
    "digest-every-2s": {"task": "harness.legacy_celery.mail_digest", "schedule": 2.0, "args": (7,),
                        "kwargs": {"dry_run": True}, "options": {"expires": 30, "queue": "mail", "priority": 5}},
    "index-every-3s": {"task": "harness.legacy_celery.rebuild_index", "schedule": timedelta(seconds=3)},
    "digest-every-minute": {"task": "harness.legacy_celery.mail_digest", "schedule": crontab(), "args": (9,)},
    "weekday-mornings": {"task": "harness.legacy_celery.mail_digest", "schedule": crontab(minute=0, hour=9,
                         day_of_week="mon-fri"), "args": (10,)},
    "first-monday": {"task": "harness.legacy_celery.rebuild_index",
                     "schedule": crontab(minute=0, hour=6, day_of_month="1-7", day_of_week="mon")},
    "at-sunrise": {"task": "harness.legacy_celery.rebuild_index", "schedule": solar("sunrise", 48.85, 2.35)},
    "bound-task": {"task": "harness.legacy_celery.bound", "schedule": 60},
    "gone": {"task": "reports.gone", "schedule": 60},
}

"""An `rq cron` config as a team running rq 3 writes one (`rq cron harness.legacy_rq_cron`), for
`recur import rq-cron` (tests/test_import_from_code.py): intervals, crons (five fields, and croniter's six
with the seconds last), args and kwargs, a job timeout, options Recur has no equivalent of, and jobs that
cannot be mapped."""

from datetime import date

from rq import cron

from harness.legacy_jobs import archive, nightly_cleanup, refresh, send_digest

cron.register(send_digest, "default", args=(7,), kwargs={"dry_run": True}, interval=2, job_timeout=30)
cron.register(refresh, "reports", cron="* * * * * */3", name="refresh-every-3s")
cron.register(nightly_cleanup, "default", kwargs={"days": 90}, cron="30 2 * * *", job_timeout="1h",
              result_ttl=3600, meta={"team": "ops"})
cron.register(send_digest, "default", args=(8,), cron="0 9 * * mon-fri")
cron.register(archive, "default", args=(date(2024, 1, 1),), interval=3600)  # a date is not JSON
cron.register(lambda: None, "default", interval=60, name="inline")  # no name a worker could import it by
cron.register(refresh, "default", interval=60, cron="0 * * * *", name="both")  # rq refuses it too

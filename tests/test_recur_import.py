"""`recur import`: rq-scheduler's jobs (written by a real rq-scheduler into a real Redis) and crontab lines,
as schedules; printed as an apply file, created with --apply, and the same again the second time."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
import yaml
from redis import Redis

from harness.recur_cli_runner import recur

pytestmark = pytest.mark.integration


# rq-scheduler's cron() asks the crontab package for the next time, which warns about its own future default.
@pytest.mark.filterwarnings("ignore:Version 0.22.0\\+ of crontab:FutureWarning")
def test_rq_scheduler_jobs_become_schedules(stack, redis_server):
    from rq_scheduler import Scheduler

    rq_url = redis_server.url.rsplit("/", 1)[0] + "/3"  # rq-scheduler's own database on the same server
    scheduler = Scheduler(queue_name="default", connection=Redis.from_url(rq_url))
    first = datetime.utcnow().replace(microsecond=0) + timedelta(minutes=5)  # naive UTC, as rq-scheduler takes it
    every = scheduler.schedule(first, "recur_server.tasks.builtin.noop", kwargs={"report": "sales"}, interval=60,
                               repeat=3,
                               timeout=30, id="every-minute")
    cron = scheduler.cron("*/10 * * * *", "billing.jobs.invoice", args=[7, "eur"], kwargs={"dry": True},
                          id="invoices")
    scheduler.cron("0 3 * * *", "os.getcwd", id="unmapped")

    url, token = stack.api.base, stack.api.token
    result = recur(url, token, "import", "rq-scheduler", "--redis-url", rq_url,
                   "--map", "billing.jobs.invoice=builtin.sleep")
    assert "1 job(s) not imported" in result.err
    assert "#   unmapped (os.getcwd): no registered task for os.getcwd (add --map os.getcwd=TASK)" in result.out
    document = yaml.safe_load(result.out)
    assert document["workflows"] == [{"name": "builtin.noop", "task": "builtin.noop"},
                                     {"name": "builtin.sleep", "task": "builtin.sleep"}]
    by_key = {s["key"]: s for s in document["schedules"]}
    assert by_key["rq-scheduler/every-minute"] == {
        "key": "rq-scheduler/every-minute", "workflow": "builtin.noop", "name": every.description,
        "interval_seconds": 60, "anchor_date": first.isoformat() + "Z", "start_at": first.isoformat() + "Z",
        "total_repeats": 3,
        "trigger_payload": {"report": "sales"}, "timeout_seconds": 30}
    assert by_key["rq-scheduler/invoices"] == {
        "key": "rq-scheduler/invoices", "workflow": "builtin.sleep", "name": cron.description,
        "cron": "*/10 * * * *", "timezone": "UTC", "trigger_payload": {"args": [7, "eur"], "kwargs": {"dry": True}}}
    assert stack.api.ok("GET", "/api/v1/schedules/")["total"] == 0  # printed only

    applied = recur(url, token, "import", "rq-scheduler", "--redis-url", rq_url,
                    "--map", "billing.jobs.invoice=builtin.sleep", "--apply")
    assert applied.err.splitlines()[-1] == "2 created, 0 updated, 0 deleted, 0 unchanged"
    made = {s["key"]: s for s in stack.api.ok("GET", "/api/v1/schedules/")["items"]}
    assert set(made) == {"rq-scheduler/every-minute", "rq-scheduler/invoices"}
    assert made["rq-scheduler/every-minute"]["next_run_at"] == first.isoformat() + "Z"  # rq-scheduler's next time
    assert made["rq-scheduler/invoices"]["cron"] == "*/10 * * * *"
    again = recur(url, token, "import", "rq-scheduler", "--redis-url", rq_url,
                  "--map", "billing.jobs.invoice=builtin.sleep", "--apply")
    assert again.err.splitlines()[-1] == "0 created, 0 updated, 0 deleted, 2 unchanged"


def test_crontab_lines_become_schedules(stack, tmp_path):
    crontab = tmp_path / "crontab"
    crontab.write_text(
        "# m h dom mon dow command\n"
        "MAILTO=ops@example.com\n"
        "CRON_TZ=Europe/Berlin\n"
        "*/5 9-17 * * 1-5 /usr/local/bin/backup.sh --full\n"
        "@daily /opt/clean\n"
        "@reboot /usr/local/bin/backup.sh --boot\n"
        "this is not cron\n"
    )
    url, token = stack.api.base, stack.api.token
    result = recur(url, token, "import", "crontab", str(crontab), "--map", "backup.sh=builtin.noop", "--apply")
    document = yaml.safe_load(result.out)
    assert document["schedules"] == [{
        "key": document["schedules"][0]["key"], "workflow": "builtin.noop",
        "name": "/usr/local/bin/backup.sh --full", "cron": "*/5 9-17 * * 1-5", "timezone": "Europe/Berlin",
        "trigger_payload": {"command": "/usr/local/bin/backup.sh --full"}}]
    assert document["schedules"][0]["key"].startswith("crontab/backup.sh-")
    unmapped = [line for line in result.out.splitlines() if line.startswith("#   ")]
    assert unmapped == [
        "#   line 2 (MAILTO=...): environment settings are not carried over",
        "#   line 5 (/opt/clean): no registered task for it (add --map '/opt/clean=TASK')",
        "#   line 6 (@reboot /usr/local/bin/backup.sh --boot): @reboot has no time to schedule",
        "#   line 7 (this is not cron): not a crontab entry (5 time fields and a command)",
    ]
    assert result.err.splitlines()[-1] == "1 created, 0 updated, 0 deleted, 0 unchanged"
    [made] = stack.api.ok("GET", "/api/v1/schedules/")["items"]
    assert (made["cron"], made["timezone"], made["key"]) == ("*/5 9-17 * * 1-5", "Europe/Berlin",
                                                            document["schedules"][0]["key"])
    bad_map = recur(url, token, "import", "crontab", str(crontab), "--map", "backup.sh=no.such.task", ok=False)
    assert bad_map.code == 2 and "--map names tasks the server does not have: ['no.such.task']" in bad_map.err


def test_an_import_whose_last_line_is_refused_creates_nothing(stack, tmp_path):
    """Whole or nothing for the importers too: the server refuses the last crontab line (a day that never
    comes, which only the write meets), and neither the workflow nor the schedules of the lines before it
    are kept."""
    crontab = tmp_path / "crontab"
    crontab.write_text("*/5 * * * * /usr/local/bin/backup.sh --a\n"
                       "0 3 * * * /usr/local/bin/backup.sh --b\n"
                       "0 0 31 2 * /usr/local/bin/backup.sh --never\n")
    url, token = stack.api.base, stack.api.token
    refused = recur(url, token, "import", "crontab", str(crontab), "--map", "backup.sh=builtin.noop", "--apply",
                    ok=False)
    assert refused.code == 1 and "Nothing of the apply was kept." in refused.err, refused
    assert "schedule crontab/backup.sh-" in refused.err and ".cron:" in refused.err
    assert stack.api.ok("GET", "/api/v1/schedules/")["items"] == []
    assert stack.api.ok("GET", "/api/v1/workflows/")["items"] == []

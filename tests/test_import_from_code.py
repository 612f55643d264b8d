"""`recur import rq-cron` and `recur import celery-beat`: a config written for the real libraries (rq 3's
cron.register, Celery's crontab, solar and timedelta; harness/legacy_rq_cron.py, harness/legacy_celery.py)
becomes a module of declarations, with what could not be mapped listed and why; loaded by a real worker.py
beside the team's own modules, it creates schedules that run, each function receiving its arguments."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from harness.recur_cli_runner import recur
from harness.servers import wait_for
from harness.stack import Stack

NO_SERVER = "http://127.0.0.1:9"  # the importers of code never call the server


def imported(*args: str) -> tuple[str, str]:
    result = recur(NO_SERVER, None, "import", *args)
    compile(result.out, "imported.py", "exec")  # the output is a Python module
    return result.out, result.err


def declarations(text: str) -> dict[str, str]:
    """Each recur.register(...) call of a generated module (none of these arguments holds a parenthesis),
    on one line, by its key."""
    calls = re.findall(r"recur\.register\(([^)]*)\)", " ".join(text.split()))
    return {re.search(r"key='([^']+)'", call).group(1): call for call in calls}  # type: ignore[union-attr]


def test_an_rq_cron_config_becomes_declarations_with_what_did_not_map_listed() -> None:
    text, err = imported("rq-cron", "harness.legacy_rq_cron")
    found = declarations(text)
    digest = [k for k in found if k.startswith("rq-cron/harness.legacy_jobs.send_digest-")]
    assert len(digest) == 2, found  # one function registered twice: two keys, stable across imports
    every_2s = next(found[k] for k in digest if "interval=2" in found[k])
    assert "args=[7], kwargs={'dry_run': True}, timeout=30" in every_2s
    assert "cron='*/3 * * * * *', tz='UTC'" in found["rq-cron/refresh-every-3s"]  # croniter's seconds go first
    cleanup = found["rq-cron/harness.legacy_jobs.nightly_cleanup"]
    assert "cron='30 2 * * *'" in cleanup and "kwargs={'days': 90}" in cleanup and "timeout=3600" in cleanup
    assert "not carried: result_ttl" in text and "not carried: meta" in text
    assert "queue=" not in text and "rq's queue names are not carried" in text
    assert "from harness.legacy_jobs import nightly_cleanup, refresh, send_digest" in text
    unmapped = text.split("# Not imported (3):\n")[1].split("\n\n")[0]
    assert "harness.legacy_jobs.archive: its args are not JSON values" in unmapped
    assert "inline: harness.legacy_rq_cron.<lambda> is not importable by its name" in unmapped
    assert "both: rq needs exactly one of interval= and cron=" in unmapped
    assert "3 job(s) not imported" in err
    again, _ = imported("rq-cron", "harness.legacy_rq_cron")
    assert again == text

    kept, _ = imported("rq-cron", "harness.legacy_rq_cron", "--keep-queues", "--timezone", "Europe/Paris")
    assert ("queue='reports', cron='*/3 * * * * *', tz='Europe/Paris'"
            in declarations(kept)["rq-cron/refresh-every-3s"])


def test_a_celery_beat_schedule_becomes_declarations_with_what_did_not_map_listed() -> None:
    text, err = imported("celery-beat", "harness.legacy_celery:app")
    found = declarations(text)
    assert "mail_digest.run" in text and "from harness.legacy_celery import mail_digest, rebuild_index" in text
    assert ("interval=2, args=[7], kwargs={'dry_run': True}, catch_up_window_seconds=30"
            in found["celery-beat/digest-every-2s"])  # options.expires: a tick that late is not run
    assert "interval=3, timeout=45" in found["celery-beat/index-every-3s"]  # the task's time_limit
    assert "cron='* * * * *', tz='Europe/Paris', args=[9]" in found["celery-beat/digest-every-minute"]
    assert "cron='0 9 * * mon-fri', tz='Europe/Paris'" in found["celery-beat/weekday-mornings"]
    # Celery needs the day of month and the day of week to match, cron either: day_or=False
    assert "cron='0 6 1-7 * mon', tz='Europe/Paris', day_or=False" in found["celery-beat/first-monday"]
    assert "not carried: options priority=5" in text
    unmapped = text.split("# Not imported (3):\n")[1].split("\n\n")[0]
    assert "at-sunrise: solar('sunrise', 48.85, 2.35): the sun's events move with the date" in unmapped
    assert "bound-task: harness.legacy_celery.bound is a bound task (bind=True)" in unmapped
    assert "gone: the app has no task 'reports.gone'" in unmapped
    assert "3 job(s) not imported" in err

    bare, _ = imported("celery-beat", "harness.legacy_celery", "--keep-queues")  # MODULE alone: its `app`
    assert "queue='mail'" in declarations(bare)["celery-beat/digest-every-2s"]


def test_a_config_that_cannot_be_loaded_is_an_error() -> None:
    result = recur(NO_SERVER, None, "import", "rq-cron", "tests.no_such_config", ok=False)
    assert result.code == 1 and "cannot load the rq cron config tests.no_such_config" in result.err
    result = recur(NO_SERVER, None, "import", "celery-beat", "harness.legacy_jobs", ok=False)
    assert result.code == 1 and "harness.legacy_jobs has no Celery app named app or celery" in result.err


def calls(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.integration
def test_imported_declarations_run_on_a_real_worker(stack: Stack, tmp_path: Path) -> None:
    rq_module, celery_module = tmp_path / "imported_rq.py", tmp_path / "imported_celery.py"
    recur(NO_SERVER, None, "import", "rq-cron", "harness.legacy_rq_cron", "-o", str(rq_module))
    recur(NO_SERVER, None, "import", "celery-beat", "harness.legacy_celery:app", "-o", str(celery_module))
    calls_file = tmp_path / "calls.jsonl"
    stack.env.update({
        "RECUR_TASK_MODULES": f"imported_rq={rq_module},imported_celery={celery_module}",
        "RECUR_SYNC_ON_START": "1", "RECUR_TEST_CALLS_FILE": str(calls_file)})
    stack.start_worker()
    stack.wait_workers_ready(90)

    keys = {s["key"]: s for s in stack.api.ok("GET", "/api/v1/schedules/?limit=100")["items"]}
    assert {k.split("/")[0] for k in keys} == {"rq-cron", "celery-beat"} and len(keys) == 9, sorted(keys)
    assert keys["celery-beat/first-monday"]["day_or"] is False
    assert keys["rq-cron/refresh-every-3s"]["cron"] == "*/3 * * * * *"

    def seen() -> set[tuple[str, str]]:
        return {(c["function"], json.dumps([c["args"], c["kwargs"]], sort_keys=True)) for c in calls(calls_file)}

    # One of each kind from each config: the rq interval with args and kwargs and its six-field cron; the
    # beat entry in seconds with args and kwargs, its timedelta, and its every-minute crontab.
    wanted = {("send_digest", json.dumps([[7], {"dry_run": True}])), ("refresh", json.dumps([[], {}])),
              ("mail_digest", json.dumps([[7], {"dry_run": True}])), ("rebuild_index", json.dumps([[], {}])),
              ("mail_digest", json.dumps([[9], {"dry_run": False}]))}
    wait_for(lambda: wanted <= seen(), 90, interval=0.5, what=f"every kind to run: {wanted - seen()}")
    # Besides those, only entries whose daily time the test may span: rq's nightly cleanup and weekday digest,
    # and the beat's weekday mornings (09:00 Paris: a CI run at 07:59 UTC on a Wednesday saw it run, rightly).
    assert seen() <= wanted | {("nightly_cleanup", json.dumps([[], {"days": 90}])),
                               ("send_digest", json.dumps([[8], {}])),
                               ("mail_digest", json.dumps([[10], {"dry_run": False}]))}

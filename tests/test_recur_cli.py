"""The `recur` command line against real processes: gunicorn serving the API and a worker running links."""

from __future__ import annotations

import os
import subprocess
import tomllib

import pytest

from harness.recur_cli_runner import recur
from harness.servers import ROOT, free_port, wait_for
from harness.stack import QUICK_WEBHOOKS

pytestmark = pytest.mark.integration


def test_the_console_script_is_declared():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["scripts"]["recur"] == "recur_cli.main:cli"
    from recur_cli.main import cli

    assert callable(cli)


def test_schedules_and_workflows_through_the_cli(stack):
    stack.start_worker()
    stack.wait_workers_ready()  # ticks that come due before a worker listens are missed, not run
    url, token = stack.api.base, stack.api.token

    def run(*args: str, ok: bool = True):  # type: ignore[no-untyped-def]
        return recur(url, token, *args, ok=ok)

    created = run("workflows", "create", "nightly", "builtin.noop")
    assert created.out.startswith("created workflow ")
    workflow_id = created.out.split()[2]
    listing = run("workflows", "list").out.splitlines()
    assert listing[0].split() == ["ID", "NAME", "TASK", "OWNER", "CREATED"]
    assert listing[1].split()[:3] == [workflow_id, "nightly", "builtin.noop"]
    assert run("workflows", "show", workflow_id, "--json").json()["task"] == "builtin.noop"

    preview = run("schedules", "preview", "--cron", "0 9 * * 1-5", "--timezone", "Europe/Berlin", "--count", "3")
    lines = preview.out.splitlines()
    assert "09:00" in lines[0] and "Monday through Friday" in lines[0]
    assert len(lines) == 4 and all("T09:00:00+0" in line for line in lines[1:])

    # by workflow name; every second, twice
    schedule = run("schedules", "create", "--name", "twice", "--workflow", "nightly", "--every", "1s",
                   "--repeats", "2", "--json").json()
    assert schedule["interval_seconds"] == 1 and schedule["workflow_id"] == int(workflow_id)
    wait_for(lambda: run("schedules", "show", schedule["id"], "--json").json()["status"] == "done", 30,
             what="the schedule to run twice")
    history = run("schedules", "runs", schedule["id"]).out.splitlines()
    assert history[0].split()[:3] == ["REPEAT", "RETRY", "STATUS"]
    rows = [line.split()[:3] for line in history[1:]]
    # A tick that came due while a run went on (the machine slow, a run longer than the 1 s interval) is passed
    # over by the overlap policy, skip: one row with no repeat number, status skipped.
    assert sorted(row for row in rows if row[0] != "-") == [["0", "0", "succeeded"], ["1", "0", "succeeded"]]
    assert {row[2] for row in rows if row[0] == "-"} <= {"skipped"}, rows

    cron = run("schedules", "create", "--name", "weekdays", "--workflow", workflow_id, "--cron", "0 9 * * 1-5",
               "--timezone", "Europe/Berlin", "--payload", '{"report": "sales"}', "--json").json()
    shown = run("schedules", "show", cron["id"]).out
    assert "trigger_payload" in shown and '{"report": "sales"}' in shown and "next runs:" in shown
    table = run("schedules", "list").out.splitlines()
    assert table[0].split()[:4] == ["ID", "KEY", "NAME", "STATUS"]
    assert any(line.startswith(cron["id"]) and "cron 0 9 * * 1-5" in line for line in table)
    assert [s["id"] for s in run("schedules", "list", "--status", "done", "--json").json()["items"]] == [
        schedule["id"]]

    edited = run("schedules", "edit", cron["id"], "--name", "weekday mornings", "--json").json()
    assert edited["name"] == "weekday mornings" and edited["revision"] == cron["revision"]
    assert run("schedules", "pause", cron["id"], "--note", "maintenance").out == f"paused {cron['id']}\n"
    paused = run("schedules", "show", cron["id"], "--json").json()
    assert paused["status"] == "paused" and paused.get("pause_note") == "maintenance"

    again = run("schedules", "pause", cron["id"], ok=False)  # the API refuses: exit 1 with its message
    assert again.code == 1
    assert again.err.startswith("error: only an active schedule can be paused; this one is paused (HTTP 409)")
    assert run("schedules", "resume", cron["id"]).out.startswith(f"resumed {cron['id']}; next run ")

    invalid = run("schedules", "edit", cron["id"], "--cron", "61 * * * *", ok=False)
    assert invalid.code == 1 and "cron" in invalid.err

    # runs outside the chain: trigger (one run per idempotency key) and a backfill's dry run
    first = run("schedules", "trigger", cron["id"], "--idempotency-key", "k1", "--json").json()
    assert run("schedules", "trigger", cron["id"], "--idempotency-key", "k1", "--json").json() == first
    wait_for(lambda: any(r["trigger"] == "manual" and r["status"] == "succeeded"
                         for r in run("schedules", "runs", cron["id"], "--json").json()["items"]), 20,
             what="the manual run")
    plan = run("schedules", "backfill", cron["id"], "--start", "2026-11-23T00:00:00Z", "--end",
               "2026-11-28T00:00:00Z", "--dry-run").out.splitlines()
    assert plan[0] == "5 runs would start:" and plan[1].strip() == "2026-11-23T08:00:00Z"  # Mon-Fri, 09:00 Berlin
    limited = run("workflows", "edit", workflow_id, "--max-concurrent-runs", "2", "--json").json()
    assert (limited["max_concurrent_runs"], limited["concurrency_policy"]) == (2, "wait")
    policies = run("schedules", "edit", cron["id"], "--catch-up", "all", "--overlap", "buffer_one", "--json").json()
    assert (policies["catch_up"], policies["overlap"]) == ("all", "buffer_one")

    assert run("schedules", "delete", cron["id"]).out == f"deleted {cron['id']}\n"
    gone = run("schedules", "show", cron["id"], ok=False)
    assert gone.code == 1 and "does not exist. (HTTP 404)" in gone.err

    health = run("health").out
    assert "database  ok" in health and "redis     ok" in health


def test_exit_codes_for_usage_auth_and_an_unreachable_server(stack):
    url = stack.api.base
    usage = recur(url, stack.api.token, "schedules", "create", "--cron", "* * * * *", ok=False)
    assert usage.code == 2 and "missing --name and --workflow" in usage.err
    assert recur(url, stack.api.token, "schedules", "frobnicate", ok=False).code == 2
    unauthorized = recur(url, "recur_not-a-real-token-at-all", "schedules", "list", ok=False)
    assert unauthorized.code == 1 and "(HTTP 401)" in unauthorized.err
    unauthorized_json = recur(url, None, "workflows", "list", "--json", ok=False)
    assert unauthorized_json.code == 1 and '"code": "unauthorized"' in unauthorized_json.err
    nowhere = recur(f"http://127.0.0.1:{free_port()}", stack.api.token, "health", ok=False)
    assert nowhere.code == 1 and nowhere.err.startswith("error: cannot reach http://127.0.0.1:")


@pytest.fixture
def stack_env() -> dict[str, str]:
    return QUICK_WEBHOOKS  # webhooks to a loopback receiver, retried quickly


def test_webhooks_tokens_owners_events_runs_and_breaker_through_the_cli(stack, receiver):
    stack.start_worker()
    stack.wait_workers_ready()
    url, token = stack.api.base, stack.api.token

    def run(*args: str, ok: bool = True):  # type: ignore[no-untyped-def]
        return recur(url, token, *args, ok=ok)

    made = run("webhooks", "create", receiver.url, "--event", "schedule.paused").out.splitlines()
    assert made[0].startswith("created webhook ") and made[0].endswith("for schedule.paused")
    hook_id, secret = made[0].split()[2], made[1].split()[-1]
    assert secret.startswith("whsec_") and made[1].startswith("secret (shown once")
    assert "secret" not in run("webhooks", "show", hook_id, "--json").json()
    assert run("webhooks", "list").out.splitlines()[1].split()[:3] == [hook_id, receiver.url, "schedule.paused"]

    assert [t["name"] for t in run("tasks", "list", "--json").json()["items"]].count("builtin.noop") == 1
    assert run("me", "--json").json()["is_admin"] is True
    run("workflows", "create", "reports", "builtin.noop", "--breaker-threshold", "3", "--queue", "recur")
    schedule = run("schedules", "create", "--name", "nightly", "--workflow", "reports", "--cron", "0 2 * * *",
                   "--json").json()
    run("schedules", "pause", schedule["id"])  # sends schedule.paused to the webhook
    wait_for(lambda: any(a["status_code"] == 204 for a in run("webhooks", "deliveries", hook_id, "--json").json()[
        "items"]), 30, what="the schedule.paused delivery")
    log = run("webhooks", "deliveries", hook_id).out.splitlines()
    assert log[0].split()[:3] == ["DELIVERY", "ATTEMPT", "AT"] and log[-1] == "pending deliveries: 0"
    delivery_id = log[1].split()[0]
    again = run("webhooks", "redeliver", hook_id, delivery_id).out
    assert again.startswith(f"delivery {delivery_id} pending; next attempt ")
    wait_for(lambda: len(receiver.events()) == 2, 30, what="the redelivery")
    edited = run("webhooks", "edit", hook_id, "--event", "schedule.paused", "--event", "run.failed").out
    assert edited == f"changed webhook {hook_id}: {receiver.url} for run.failed, schedule.paused\n"
    assert run("webhooks", "edit", hook_id, ok=False).code == 2
    assert run("webhooks", "delete", hook_id).out == f"deleted webhook {hook_id}\n"

    events = run("events", "schedule", schedule["id"]).out.splitlines()
    assert events[0].split() == ["ID", "AT", "ACTION", "BY", "CHANGES"] and events[1].split()[2] == "pause"

    breaker = run("breaker", "show", "reports").out
    assert "state" in breaker and "closed" in breaker and "threshold" in breaker
    assert run("breaker", "reset", "reports").out.endswith(": closed\n")
    assert run("breaker", "show", "reports", "--json").json()["history"][-1]["reason"] == "reset by hand"

    run("schedules", "resume", schedule["id"])
    triggered = run("runs", "trigger", schedule["id"], "--json").json()
    wait_for(lambda: any(r["id"] == triggered["run_id"] and r["status"] == "succeeded"
                         for r in run("runs", "list", schedule["id"], "--json").json()["items"]), 30,
             what="the manual run")
    started = run("runs", "backfill", schedule["id"], "--start", "2026-11-01T00:00:00Z", "--end",
                  "2026-11-03T00:00:00Z", "--json").json()
    assert started["total"] == 2
    listed = run("runs", "backfills", schedule["id"]).out.splitlines()
    assert listed[0].split()[:3] == ["ID", "STATUS", "DONE"] and listed[1].split()[0] == started["id"]
    assert run("runs", "cancel-backfill", schedule["id"], started["id"]).out.startswith(f"backfill {started['id']} ")

    created = run("tokens", "create", "ci").out.splitlines()
    token_id, secret = created[0].split()[2], created[-1]
    assert recur(url, secret, "me", "--json").json()["name"] == run("me", "--json").json()["name"]
    assert any(line.split()[:2] == [token_id, "ci"] for line in run("tokens", "list").out.splitlines())
    assert run("tokens", "revoke", token_id).out == f"revoked token {token_id}\n"
    assert recur(url, secret, "me", ok=False).code == 1

    owner = run("owners", "create", "team-b", "--json").json()
    team_b = owner["token"]["token"]
    forbidden = recur(url, team_b, "owners", "list", ok=False)
    assert forbidden.code == 1 and "(HTTP 403)" in forbidden.err
    quotas = run("owners", "quotas", str(owner["id"]), "--schedules", "5").out
    assert "quota schedules: 5 (its own)" in quotas
    assert run("owners", "quotas", str(owner["id"]), "--schedules", "default", "--json").json()[
        "quotas"]["schedules"]["override"] is None
    owners = run("owners", "list").out.splitlines()
    assert any(line.split()[:3] == [str(owner["id"]), "team-b", "no"] for line in owners)
    assert run("owners", "delete", str(owner["id"]), "--yes").out == f"deleted owner {owner['id']}\n"
    trail = run("events", "owners", "--json").json()["items"]
    assert [e["action"] for e in trail if e["owner_id"] == owner["id"]][:1] == ["owner.deleted"]
    assert run("owners", "events").out.splitlines()[1].split()[2] == "owner.deleted"

    invalid = run("webhooks", "create", "ftp://127.0.0.1/", "--event", "run.failed", ok=False)
    assert invalid.code == 1 and "url:" in invalid.err  # the field the API refused, named


def test_shell_completion_through_click():
    script = ROOT / ".venv" / "bin" / "recur"
    if not script.exists():
        pytest.skip("the recur console script is not installed in .venv")
    env = {**os.environ, "_RECUR_COMPLETE": "bash_source"}
    source = subprocess.run([str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert "_recur_completion" in source.stdout and "complete " in source.stdout
    env = {**os.environ, "_RECUR_COMPLETE": "bash_complete", "COMP_WORDS": "recur web", "COMP_CWORD": "1"}
    words = subprocess.run([str(script)], env=env, capture_output=True, text=True, timeout=60).stdout
    assert "webhooks" in words


def test_every_schedule_field_and_list_filter_has_an_option(stack):
    url, token = stack.api.base, stack.api.token

    def run(*args: str, ok: bool = True):  # type: ignore[no-untyped-def]
        return recur(url, token, *args, ok=ok)

    run("workflows", "create", "leap", "builtin.noop")
    made = run("schedules", "create", "--name", "leap mondays", "--workflow", "leap", "--cron", "0 0 29 2 1",
               "--day-and", "--alert-after", "600", "--keep-runs-days", "3", "--trigger-node", "n1", "--json").json()
    assert (made["day_or"], made["alert_after_seconds"], made["keep_runs_days"], made["trigger_node_id"]) == (
        False, 600, 3, "n1")
    assert made["next_run_at"].startswith("2044-02-29")  # a 29 February that is a Monday, not either
    cleared = run("schedules", "edit", str(made["id"]), "--alert-after", "none", "--keep-runs-days", "None",
                  "--json").json()
    assert (cleared["alert_after_seconds"], cleared["keep_runs_days"]) == (None, None)
    preview = run("schedules", "preview", "--cron", "0 0 29 2 1", "--day-and", "--count", "1", "--json").json()
    assert preview["next_runs"][0]["utc"].startswith("2044-02-29")
    bad = run("schedules", "edit", str(made["id"]), "--alert-after", "soon", ok=False)
    assert bad.code == 2 and "--alert-after" in bad.err and "'none'" in bad.err

    me = run("me", "--json").json()["id"]
    other = stack.api.ok("POST", "/api/v1/owners/", {"name": "olga"})["id"]
    assert [s["id"] for s in run("schedules", "list", "--owner", str(me), "--json").json()["items"]] == [made["id"]]
    assert run("schedules", "list", "--owner", str(other), "--json").json()["items"] == []
    assert [w["name"] for w in run("workflows", "list", "--owner", str(me), "--json").json()["items"]] == ["leap"]
    assert run("workflows", "list", "--owner", str(other), "--json").json()["items"] == []

"""The `recur` command line against real processes: gunicorn serving the API and a worker running links."""

from __future__ import annotations

import tomllib

import pytest

from tests.recur_cli_runner import recur
from tests.servers import ROOT, free_port, wait_for

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
    assert sorted(line.split()[:3] for line in history[1:]) == [["0", "0", "succeeded"], ["1", "0", "succeeded"]]

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
    assert again.err.startswith("error: only an active schedule can be paused; this one is paused (HTTP 400)")
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

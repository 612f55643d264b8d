"""`recur apply`: schedules as code, against a real server. Applying the same file twice changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy
import yaml

from harness.receiver import verify
from harness.recur_cli_runner import recur
from harness.servers import wait_for
from harness.stack import QUICK_WEBHOOKS
from recur_server.declarations.plan import workflow_defaults

POLICY_DEFAULTS = workflow_defaults()

pytestmark = pytest.mark.integration

WORKFLOWS = [
    {"name": "reports", "task": "builtin.noop"},
    {"name": "cleanup", "task": "builtin.noop"},
    {"name": "sync", "task": "builtin.sleep", "max_concurrent_runs": 2, "concurrency_policy": "skip"},
]
# Ten schedules using every kind of timing and the fields whose stored form differs from the file's.
SCHEDULES = [
    {"key": "reports/nightly", "workflow": "reports", "name": "Nightly", "cron": "0 2 * * *",
     "timezone": "Europe/Berlin", "trigger_payload": {"report": "sales", "days": [1, 2]}},
    {"key": "reports/weekly", "workflow": "reports", "name": "Weekly", "cron": "30 6 * * 1",
     "timezone": "America/New_York", "max_retries": 1, "timeout_seconds": 120},
    {"key": "reports/monthly", "workflow": "reports", "name": "Monthly",
     "rrule": "FREQ=MONTHLY;BYMONTHDAY=1;BYHOUR=7;BYMINUTE=0", "description": "first of the month"},
    {"key": "cleanup/tmp", "workflow": "cleanup", "name": "Temp files", "every": "15m", "jitter_seconds": 30},
    {"key": "cleanup/logs", "workflow": "cleanup", "name": "Logs", "interval_seconds": 3600,
     "anchor_date": "2026-01-01T00:00:00.250+01:00"},
    {"key": "cleanup/once", "workflow": "cleanup", "name": "Once", "at": "2999-06-01T12:00:00.5+02:00"},
    {"key": "sync/office-hours", "workflow": "sync", "name": "Office hours", "every": "90m",
     "only_between": "09:00-17:00", "timezone": "Europe/London", "not_on": ["sat", "sun"]},
    {"key": "sync/holidays", "workflow": "sync", "name": "Not on holidays", "cron": "0 12 * * *",
     "not_on": ["Monday", 3], "end_at": "2999-12-31T23:59:59Z"},
    {"key": "sync/capped", "workflow": "sync", "name": "Ten times", "every": "10m", "total_repeats": 10,
     "catch_up": "all", "catch_up_limit": 5, "catch_up_window_seconds": 3600, "overlap": "buffer_one"},
    {"key": "sync/paused-later", "workflow": "sync", "name": "Start later", "cron": "*/5 * * * *",
     "start_at": "2999-01-01T00:00:00", "on_exhausted": "pause"},
]


def _write(path: Path, schedules: list[dict]) -> Path:  # type: ignore[type-arg]
    path.write_text(yaml.safe_dump({"workflows": WORKFLOWS, "schedules": schedules}, sort_keys=False))
    return path


def test_apply_creates_then_changes_nothing_then_only_what_changed(stack, tmp_path):
    url, token = stack.api.base, stack.api.token
    api = stack.api
    path = _write(tmp_path / "recur.yaml", SCHEDULES)
    loose = api.ok("POST", "/api/v1/schedules/", {  # made by hand, without a key: apply never touches it
        "name": "by hand", "workflow_id": api.ok("POST", "/api/v1/workflows/", {"name": "x", "task": "builtin.noop"})[
            "id"], "every": "1h"})

    plan = recur(url, token, "apply", str(path), "--dry-run").out
    assert plan.splitlines()[-1] == "plan: 10 create, 0 update, 0 delete, 0 unchanged (dry run: nothing was changed)"
    assert api.ok("GET", "/api/v1/schedules/")["total"] == 1

    first = recur(url, token, "apply", str(path)).out
    assert first.splitlines()[-1] == "10 created, 0 updated, 0 deleted, 0 unchanged", first
    before = {s["key"]: s for s in api.ok("GET", "/api/v1/schedules/?limit=100")["items"] if s["key"]}
    assert len(before) == 10 and {w["name"] for w in api.ok("GET", "/api/v1/workflows/")["items"]} == {
        "reports", "cleanup", "sync", "x"}
    assert before["cleanup/tmp"]["interval_seconds"] == 900 and before["sync/capped"]["total_repeats"] == 10
    assert (before["sync/capped"]["catch_up"], before["sync/capped"]["overlap"]) == ("all", "buffer_one")
    sync = next(w for w in api.ok("GET", "/api/v1/workflows/")["items"] if w["name"] == "sync")
    assert (sync["max_concurrent_runs"], sync["concurrency_policy"]) == (2, "skip")

    second = recur(url, token, "apply", str(path)).out
    assert second.splitlines()[-1] == "0 created, 0 updated, 0 deleted, 10 unchanged", second
    again = {s["key"]: s for s in api.ok("GET", "/api/v1/schedules/?limit=100")["items"] if s["key"]}
    assert again == before  # not even updated_at moved

    edited = [dict(s) for s in SCHEDULES]
    edited[1]["cron"] = "45 6 * * 1"
    _write(path, edited)
    dry = recur(url, token, "apply", str(path), "--dry-run", "--json").json()
    changed = [s for s in dry["steps"] if s["action"] != "unchanged"]
    assert changed == [{"kind": "schedule", "name": "reports/weekly", "action": "update",
                        "id": before["reports/weekly"]["id"],
                        "changes": {"cron": {"from": "30 6 * * 1", "to": "45 6 * * 1"}}}]
    assert api.ok("GET", f"/api/v1/schedules/{before['reports/weekly']['id']}/")["cron"] == "30 6 * * 1"
    out = recur(url, token, "apply", str(path)).out
    assert "update    schedule reports/weekly  (cron: " in out
    assert out.splitlines()[-1] == "0 created, 1 updated, 0 deleted, 9 unchanged"
    after = {s["key"]: s for s in api.ok("GET", "/api/v1/schedules/?limit=100")["items"] if s["key"]}
    weekly = after.pop("reports/weekly")
    assert weekly["cron"] == "45 6 * * 1" and weekly["revision"] == before["reports/weekly"]["revision"] + 1
    assert weekly["next_run_at"] != before["reports/weekly"]["next_run_at"]  # re-planned
    assert after == {k: v for k, v in before.items() if k != "reports/weekly"}

    # Another owner's keyed schedule is theirs: the admin's --prune leaves it alone.
    bob = api.ok("POST", "/api/v1/owners/", {"name": "bob"})["token"]["token"]
    recur(url, bob, "workflows", "create", "bobs", "builtin.noop")
    recur(url, bob, "schedules", "create", "--name", "b", "--workflow", "bobs", "--every", "1h", "--key",
          "reports/nightly")

    _write(path, [s for s in edited if s["key"] != "cleanup/once"])
    without_prune = recur(url, token, "apply", str(path)).out
    assert without_prune.splitlines()[-1] == "0 created, 0 updated, 0 deleted, 9 unchanged"
    pruned = recur(url, token, "apply", str(path), "--prune").out
    assert "delete    schedule cleanup/once" in pruned
    assert pruned.splitlines()[-1] == "0 created, 0 updated, 1 deleted, 9 unchanged"
    left = api.ok("GET", "/api/v1/schedules/?limit=100")["items"]
    assert len(left) == 11  # nine keyed, the loose one, bob's
    assert loose["id"] in {s["id"] for s in left} and before["cleanup/once"]["id"] not in {s["id"] for s in left}


def test_apply_refuses_a_file_it_cannot_apply(stack, tmp_path):
    url, token = stack.api.base, stack.api.token
    bad = tmp_path / "bad.yaml"
    for text, code, message in (  # the server checks the file (422, naming the place); only YAML is the CLI's
        ("schedules: [{key: a, workflow: w, name: n, cron: '* * * * *'}, {key: a, workflow: w, name: m}]", 1,
         "file.schedules.1.key: 'a' is listed more than once"),
        ("schedules: [{workflow: w, name: n}]", 1, "file.schedules.0.key: Missing data"),
        ("schedules: [{key: a, workflow: w, name: n, after_seconds: 60}]", 1,
         "file.schedules.0.after_seconds: give `at`"),
        ("schedules: [{key: a, workflow: nowhere, name: n, cron: '* * * * *'}]", 1,
         "file.schedules.0.workflow: no single workflow named 'nowhere'"),
        ("jobs: []", 1, "file.jobs: Unknown field."),
        (": not yaml: [", 2, "is not valid YAML"),
    ):
        bad.write_text(text)
        result = recur(url, token, "apply", str(bad), ok=False)
        assert result.code == code and message in result.err, (text, result)
    bad.write_text("workflows: [{name: w, task: builtin.noop}]\n"
                   "schedules: [{key: a, workflow: w, name: n, cron: '61 * * * *'}]")
    refused = recur(url, token, "apply", str(bad), ok=False)
    assert refused.code == 1 and refused.err.startswith("error: schedule a: The request body is invalid."), refused
    assert "file.schedules.0.cron:" in refused.err


def _rows(database_url: str) -> dict[str, int]:
    engine = sqlalchemy.create_engine(database_url)
    try:
        with engine.connect() as connection:
            return {table: connection.execute(sqlalchemy.text(f"SELECT count(*) FROM {table}")).scalar_one()
                    for table in ("workflows", "scheduled_jobs", "webhooks", "calendars", "schedule_events")}
    finally:
        engine.dispose()


def test_a_file_whose_last_item_is_refused_changes_nothing(stack, tmp_path):
    """Whole or nothing, checked in the database: the server refuses the file's last schedule (a cron that never
    comes, which only the write meets), so neither its workflows, its webhook, its calendar nor the schedules
    before it are kept; the dry run meets the same refusal. Fixed, the same file applies whole."""
    url, token = stack.api.base, stack.api.token
    path = tmp_path / "recur.yaml"
    document = {
        "workflows": WORKFLOWS,
        "webhooks": [{"url": "http://127.0.0.1:9/hook", "event_types": ["run.failed"]}],
        "calendars": [{"name": "office", "dates": ["2030-12-24"]}],
        "schedules": [*SCHEDULES[:3], {"key": "zz/never", "workflow": "cleanup", "name": "Never",
                                       "cron": "0 0 31 2 *", "calendar": "office"}],
    }
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    before = _rows(stack.database_url)
    for dry_run in ("--dry-run",), ():
        refused = recur(url, token, "apply", str(path), *dry_run, ok=False)
        assert refused.code == 1 and refused.err.startswith("error: schedule zz/never: "), refused
        assert "Nothing of the apply was kept." in refused.err and "file.schedules.3.cron:" in refused.err
        assert _rows(stack.database_url) == before
    document["schedules"][-1]["cron"] = "0 0 28 2 *"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    done = recur(url, token, "apply", str(path)).out
    assert done.splitlines()[-1] == "4 created, 0 updated, 0 deleted, 0 unchanged", done
    assert "secret (shown once" in done
    after = _rows(stack.database_url)
    assert (after["workflows"], after["scheduled_jobs"], after["webhooks"], after["calendars"]) == (
        before["workflows"] + 3, before["scheduled_jobs"] + 4, before["webhooks"] + 1, before["calendars"] + 1)


@pytest.fixture
def stack_env() -> dict[str, str]:
    return QUICK_WEBHOOKS  # webhooks to a loopback receiver


POLICIES = {"max_concurrent_runs": 2, "concurrency_policy": "skip", "breaker_threshold": 3,
            "breaker_reset_seconds": 60, "queue": "recur"}


def test_apply_declares_webhooks_and_workflow_policies_and_prune_resets_them(stack, tmp_path, receiver):
    url, token, api = stack.api.base, stack.api.token, stack.api
    first, second = receiver.url, receiver.url.replace("/hook", "/second")
    by_hand = api.ok("POST", "/api/v1/webhooks/", {"url": receiver.url.replace("/hook", "/by-hand"),
                                                   "event_types": ["run.failed"]})
    path = tmp_path / "recur.yaml"

    def write(workflow: dict, webhooks: list | None) -> None:  # type: ignore[type-arg]
        document = {"workflows": [{"name": "reports", "task": "builtin.noop", **workflow}],
                    "schedules": [{"key": "nightly", "workflow": "reports", "name": "Nightly", "cron": "0 2 * * *"}]}
        if webhooks is not None:
            document["webhooks"] = webhooks
        path.write_text(yaml.safe_dump(document, sort_keys=False))

    def hooks() -> dict[str, dict]:  # type: ignore[type-arg]
        return {w["url"]: w for w in api.ok("GET", "/api/v1/webhooks/")["items"]}

    def reports() -> dict:  # type: ignore[type-arg]
        return next(w for w in api.ok("GET", "/api/v1/workflows/")["items"] if w["name"] == "reports")

    # A file without a `webhooks` entry does not speak for webhooks: --prune leaves the one made by hand.
    write(POLICIES, None)
    out = recur(url, token, "apply", str(path), "--prune").out
    assert out.splitlines()[-2:] == ["workflows: 1 created, 0 updated, 0 deleted, 0 unchanged",
                                     "1 created, 0 updated, 0 deleted, 0 unchanged"], out
    assert {k: reports()[k] for k in POLICIES} == POLICIES
    assert list(hooks()) == [by_hand["url"]]

    write(POLICIES, [{"url": first, "event_types": ["schedule.paused", "run.failed", "schedule.paused"]},
                     {"url": second, "event_types": ["schedule.dead"]}])
    dry = recur(url, token, "apply", str(path), "--prune", "--dry-run", "--json").json()
    assert [(s["kind"], s["name"], s["action"]) for s in dry["steps"]] == [
        ("workflow", "reports", "unchanged"), ("webhook", first, "create"), ("webhook", second, "create"),
        ("webhook", by_hand["url"], "delete"), ("schedule", "nightly", "unchanged")]
    assert dry["summaries"]["webhook"] == {"create": 2, "update": 0, "delete": 1, "unchanged": 0}
    assert "secret" not in str(dry) and list(hooks()) == [by_hand["url"]]  # the dry run changed nothing

    # Created: each secret printed once, under its line; the file holds none.
    out = recur(url, token, "apply", str(path)).out.splitlines()
    made = hooks()
    assert set(made) == {by_hand["url"], first, second}
    assert made[first]["event_types"] == ["run.failed", "schedule.paused"]
    at = out.index(f"create    webhook {first}")
    assert out[at + 1].startswith("          secret (shown once; verify signatures with it): whsec_")
    secret = out[at + 1].split()[-1]
    assert out[-2:] == ["webhooks: 2 created, 0 updated, 0 deleted, 0 unchanged",
                        "0 created, 0 updated, 0 deleted, 1 unchanged"], out
    again = recur(url, token, "apply", str(path)).out
    assert "secret" not in again and again.splitlines()[-3:] == [
        "workflows: 0 created, 0 updated, 0 deleted, 1 unchanged",
        "webhooks: 0 created, 0 updated, 0 deleted, 2 unchanged", "0 created, 0 updated, 0 deleted, 1 unchanged"]

    # The printed secret is the one that signs: pause the schedule and check the delivery's signature.
    nightly = api.ok("GET", "/api/v1/schedules/?key=nightly")["items"][0]
    api.ok("POST", f"/api/v1/schedules/{nightly['id']}/pause/", {})
    wait_for(lambda: receiver.types() == ["schedule.paused"], 30, what="the schedule.paused delivery")
    delivered = receiver.received[0]
    assert verify(secret, delivered["headers"], delivered["body"])

    # Changed event types: one PATCH, same webhook, same secret. Policies left out stay without --prune.
    write({"concurrency_policy": "skip"}, [{"url": first, "event_types": ["schedule.paused"]}])
    out = recur(url, token, "apply", str(path)).out
    assert f"update    webhook {first}  (event_types: " in out and "secret" not in out
    assert out.splitlines()[-3:-1] == ["workflows: 0 created, 0 updated, 0 deleted, 1 unchanged",
                                       "webhooks: 0 created, 1 updated, 0 deleted, 0 unchanged"], out
    assert hooks()[first] == {**made[first], "event_types": ["schedule.paused"]}
    assert second in hooks() and by_hand["url"] in hooks() and {k: reports()[k] for k in POLICIES} == POLICIES

    # --prune: the webhooks the file no longer lists go (the one made by hand too, now that the file has a
    # `webhooks` entry), and the workflow's undeclared policies go back to what a new workflow gets.
    out = recur(url, token, "apply", str(path), "--prune").out
    assert f"delete    webhook {second}" in out and f"delete    webhook {by_hand['url']}" in out
    assert "update    workflow reports  (" in out and "max_concurrent_runs: 2 -> -" in out
    assert list(hooks()) == [first] and hooks()[first]["id"] == made[first]["id"]
    fresh = api.ok("POST", "/api/v1/workflows/", {"name": "fresh", "task": "builtin.noop"})
    assert {k: fresh[k] for k in POLICY_DEFAULTS} == POLICY_DEFAULTS  # the schema's defaults are a create's
    assert {k: reports()[k] for k in POLICIES} == {**POLICY_DEFAULTS, "concurrency_policy": "skip"}
    again = recur(url, token, "apply", str(path), "--prune", "--json").json()
    assert {s["action"] for s in again["steps"]} == {"unchanged"}


def test_a_webhook_in_a_file_has_a_url_event_types_and_never_a_secret(stack, tmp_path):
    url, token = stack.api.base, stack.api.token
    bad = tmp_path / "bad.yaml"
    for text, message in (
        ("webhooks: [{url: 'https://1.1.1.1/a', event_types: [run.failed], secret: whsec_abc}]",
         "file.webhooks.0.secret: no secret in a file"),
        ("webhooks: [{url: 'https://1.1.1.1/a', event_types: [run.failed]}, "
         "{url: 'https://1.1.1.1/a', event_types: [schedule.dead]}]", "file.webhooks.1.url: 'https://1.1.1.1/a' is "
                                                                      "listed more than once"),
        ("webhooks: [{event_types: [run.failed]}]", "file.webhooks.0.url: Missing data"),
        ("webhooks: [{url: 'https://1.1.1.1/a', event_types: []}]",
         "file.webhooks.0.event_types: Length must be between 1"),
        ("webhooks: [{url: 'https://1.1.1.1/a', event_types: [run.failed], name: a}]",
         "file.webhooks.0.name: Unknown field."),
    ):
        bad.write_text(text)
        result = recur(url, token, "apply", str(bad), ok=False)
        assert result.code == 1 and message in result.err, (text, result)
    bad.write_text("webhooks: [{url: 'http://127.0.0.1:9/x', event_types: [run.failed]},"
                   " {url: 'http://169.254.169.254/y', event_types: [run.failed]}]")
    refused = recur(url, token, "apply", str(bad), ok=False)  # the address guard's check, naming the webhook
    assert refused.code == 1 and "error: webhook http://169.254.169.254/y: The request body is invalid." in refused.err
    assert "file.webhooks.1.url:" in refused.err
    # whole or nothing: the webhook before the refused one was not made either, so it has no secret to show
    assert refused.err.startswith("error: ") and "whsec_" not in refused.err
    assert [w for w in stack.api.ok("GET", "/api/v1/webhooks/")["items"] if w["url"].endswith(":9/x")] == []

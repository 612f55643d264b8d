"""The public Python client (recur_client) against real processes: gunicorn serving the API, worker.py
running links and sending webhooks, a real HTTP receiver. Every operation of the API's OpenAPI document is
called through the client at least once, and the API's errors arrive as the right exception naming the field."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any, get_type_hints

import pytest

import recur_client
from harness.receiver import Receiver
from harness.servers import ROOT, free_port, wait_for
from harness.stack import QUICK_WEBHOOKS, Stack
from recur_client import (
    Client,
    Conflict,
    Forbidden,
    NotFound,
    Unauthorized,
    Unreachable,
    ValidationFailed,
)

# Each result type and the schema of the OpenAPI document it stands for.
RESULTS = {
    "Owner": "OwnerOut", "Token": "TokenOut", "CreatedToken": "TokenCreatedOut", "CreatedOwner": "OwnerCreatedOut",
    "Quota": "QuotaOut", "Quotas": "QuotasOut", "OwnerEvent": "OwnerEventOut", "ScheduleEvent": "EventOut",
    "Health": "HealthOut", "Task": "TaskOut", "Workflow": "WorkflowOut", "BreakerTransition": "BreakerTransitionOut",
    "Breaker": "BreakerOut", "Schedule": "ScheduleOut", "ScheduleDetail": "ScheduleDetailOut",
    "ScheduleDescription": "ScheduleDescribeOut", "ScheduleStats": "ScheduleStatsOut", "RunBrief": "RunBriefOut",
    "Preview": "PreviewOut", "PreviewTime": "PreviewTimeOut", "BatchDeleted": "BatchDeleteOut", "Run": "RunOut",
    "RunDetail": "RunDetailOut",
    "Triggered": "TriggeredOut", "BackfillPlan": "BackfillPlanOut", "Backfill": "BackfillOut",
    "Webhook": "WebhookOut", "CreatedWebhook": "WebhookCreatedOut", "DeliveryAttempt": "DeliveryAttemptOut",
    "DeliveryAttemptPage": "DeliveryAttemptPage", "Delivery": "DeliveryOut", "Page": "SchedulePage",
    "Calendar": "CalendarOut", "CalendarDay": "CalendarDayOut", "CalendarDays": "CalendarDaysOut",
    "Explanation": "ExplainOut", "ExplainRun": "ExplainRunOut", "WorkerProcess": "WorkerOut",
}
# Each input type and the request schema whose fields it offers.
FIELDS = {"ScheduleFields": "ScheduleIn", "TimingFields": "PreviewIn", "WorkflowFields": "WorkflowIn",
          "QuotaFields": "QuotasIn", "CalendarFields": "CalendarIn"}


@pytest.fixture
def stack_env() -> dict[str, str]:
    return QUICK_WEBHOOKS


def test_the_client_imports_without_the_server_or_flask() -> None:
    code = ("import sys, recur_client; loaded = [m for m in sys.modules if m.split('.')[0] in "
            "('recur_server', 'flask', 'sqlalchemy', 'redis', 'click')]; print(loaded)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_every_result_and_field_type_is_the_api_document_key_for_key(app) -> None:  # type: ignore[no-untyped-def]
    schemas = app.test_client().get("/api/openapi.json").get_json()["components"]["schemas"]
    for ours, theirs in RESULTS.items():
        assert set(get_type_hints(getattr(recur_client, ours))) == set(schemas[theirs]["properties"]), ours
    for ours, theirs in FIELDS.items():
        assert set(get_type_hints(getattr(recur_client, ours))) == set(schemas[theirs]["properties"]) - {"count"}, ours


def _operations(doc: dict[str, Any]) -> dict[tuple[str, str], re.Pattern[str]]:
    """(METHOD, path template) of every operation of the document, each with a pattern its paths match."""
    found = {}
    for template, operations in doc["paths"].items():
        pattern = re.compile("^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)) + "$")
        for method in operations:
            if method in ("get", "post", "patch", "put", "delete"):
                found[(method.upper(), template)] = pattern
    return found


def _recording(client: Client) -> list[tuple[str, str]]:
    """Every (method, path) the client sends, as the server sees it (the client's own transport, wrapped)."""
    seen: list[tuple[str, str]] = []
    send = client.transport.request

    def request(method: str, path: str, *args: Any, **kwargs: Any) -> Any:
        seen.append((method, "/api/v1" + path.split("?")[0]))
        return send(method, path, *args, **kwargs)

    client.transport.request = request  # type: ignore[method-assign]
    return seen


@pytest.mark.integration
def test_every_operation_of_the_api_through_the_client(stack: Stack, receiver: Receiver) -> None:
    stack.start_worker()
    stack.wait_workers_ready()
    recur = Client(stack.api.base, stack.api.token)
    seen = _recording(recur)

    # first: the server's processes cache each owner's subscriptions for a while
    hook = recur.webhooks.create(receiver.url, ["schedule.paused"])
    assert hook["secret"].startswith("whsec_")
    me = recur.me()
    assert me["is_admin"] and me["quotas"]["schedules"]["limit"] > 0
    assert recur.health()["database"] == "ok"
    assert "builtin.noop" in {task["name"] for task in recur.tasks()}
    applied = recur.apply({"workflows": {"create": [{"name": "applied", "task": "builtin.noop"}]}}, dry_run=True)
    assert applied["dry_run"] and [(m["name"], m["id"]) for m in applied["workflows"]] == [("applied", None)]
    planned = recur.apply_file({"workflows": [{"name": "applied", "task": "builtin.noop"}]}, dry_run=True)
    assert [(s["kind"], s["name"], s["action"]) for s in planned["steps"]] == [("workflow", "applied", "create")]

    # workflows and their breakers
    flow = recur.workflows.create("reports", "builtin.noop", max_concurrent_runs=2, breaker_threshold=3)
    assert (flow["max_concurrent_runs"], flow["breaker_threshold"], flow["breaker_state"]) == (2, 3, "closed")
    assert recur.workflows.get(flow["id"])["name"] == "reports"
    assert recur.workflows.update(flow["id"], name="daily reports")["name"] == "daily reports"
    assert [w["id"] for w in recur.workflows.iterate()] == [flow["id"]]
    assert recur.workflows.list(limit=1)["total"] == 1
    assert recur.workflows.breaker(flow["id"])["state"] == "closed"
    reset = recur.workflows.reset_breaker(flow["id"])
    assert reset["history"][-1]["reason"] == "reset by hand" and reset["history"][-1]["from"] == "closed"

    # schedules
    preview = recur.schedules.preview(cron="0 9 * * 1-5", timezone="Europe/Berlin", count=3)
    assert len(preview["next_runs"]) == 3 and preview["timezone"] == "Europe/Berlin"
    nightly = recur.schedules.create(name="nightly", workflow_id=flow["id"], cron="0 2 * * *",
                                     timezone="Europe/Berlin", key="reports/nightly", trigger_payload={"a": 1})
    assert nightly["next_runs"] and nightly["key"] == "reports/nightly"
    described = recur.schedules.get(nightly["id"])
    assert described["stats"]["runs"] == 0 and described["trigger_payload"] == {"a": 1}
    assert recur.schedules.update(nightly["id"], description="the sales report")["description"] == "the sales report"
    assert recur.schedules.pause(nightly["id"], note="vendor down")["pause_note"] == "vendor down"
    assert recur.schedules.resume(nightly["id"])["status"] == "active"
    many = [recur.schedules.create(name=f"s{i}", workflow_id=flow["id"], every="1h")["id"] for i in range(3)]
    by_cursor = recur.schedules.list(limit=2)
    assert len(by_cursor["items"]) == 2 and by_cursor["next"] and by_cursor["total"] == 4
    assert {s["id"] for s in recur.schedules.iterate()} == {nightly["id"], *many}  # walked by cursor
    assert [s["id"] for s in recur.schedules.iterate(key="reports/nightly")] == [nightly["id"]]
    assert recur.schedules.delete_many([many[0], "no-such-schedule"]) == {"deleted": [many[0]],
                                                                         "not_found": ["no-such-schedule"]}
    recur.schedules.delete(many[1])

    # runs outside the timing: a manual run (one per idempotency key) and a backfill, planned, started, stopped
    triggered = recur.schedules.trigger(nightly["id"], idempotency_key="deploy-42")
    assert recur.schedules.trigger(nightly["id"], idempotency_key="deploy-42") == triggered
    wait_for(lambda: any(r["id"] == triggered["run_id"] and r["status"] == "succeeded"
                         for r in recur.schedules.iterate_runs(nightly["id"])), 30, what="the manual run")
    assert recur.schedules.runs(nightly["id"], limit=1)["items"][0]["trigger"] == "manual"
    one = recur.schedules.run(nightly["id"], triggered["run_id"])
    assert (one["status"], one["traceback"], one["output"]) == ("succeeded", None, None)
    plan = recur.schedules.plan_backfill(nightly["id"], "2026-11-01T00:00:00Z", "2026-11-08T00:00:00Z")
    assert plan["total"] == 7 and plan["dry_run"] is True
    slow = recur.workflows.create("slow", "builtin.sleep")
    sleeper = recur.schedules.create(name="sleeper", workflow_id=slow["id"], cron="0 2 * * *",
                                     trigger_payload={"seconds": 5})
    backfill = recur.schedules.backfill(sleeper["id"], "2026-11-01T00:00:00Z", "2026-11-08T00:00:00Z")
    assert backfill["total"] == 7 and backfill["status"] == "running"
    assert [b["id"] for b in recur.schedules.backfills(sleeper["id"])["items"]] == [backfill["id"]]
    cancelled = recur.schedules.cancel_backfill(sleeper["id"], backfill["id"])
    assert cancelled["status"] == "cancelled" and cancelled["done"] < 7

    # the audit trail of a schedule
    actions = [e["action"] for e in recur.schedules.iterate_events(nightly["id"])]
    assert {"create", "update", "pause", "resume"} <= set(actions), actions
    assert recur.schedules.events(nightly["id"], limit=1)["total"] == len(actions)

    # why it did or didn't run: a tick before the schedule was made, and one ahead (02:00 in Berlin)
    before = recur.schedules.explain(nightly["id"], "2026-01-05T01:00:00Z")
    assert (before["kind"], before["nominal"]) == ("before_created", "2026-01-05T01:00:00Z")
    ahead = recur.schedules.explain(nightly["id"], "2036-01-05T01:10:00Z")
    assert (ahead["kind"], ahead["nominal"], ahead["notes"][0]) == (
        "will_run", "2036-01-05T01:00:00Z", "no tick at the asked time: this is the nearest one")

    # webhooks: a delivery of the schedule.paused above and its attempt, redelivered by hand
    assert "secret" not in recur.webhooks.get(hook["id"])
    assert [w["id"] for w in recur.webhooks.iterate()] == [hook["id"]] == [
        w["id"] for w in recur.webhooks.list()["items"]]
    wait_for(lambda: any(a["status_code"] == 204 for a in recur.webhooks.iterate_deliveries(hook["id"])), 30,
             what="the schedule.paused delivery")
    attempt = recur.webhooks.deliveries(hook["id"])["items"][0]
    again = recur.webhooks.redeliver(hook["id"], attempt["delivery_id"])
    assert again["id"] == attempt["delivery_id"] and again["redelivered_at"]
    wait_for(lambda: [e["id"] for e in receiver.events()].count(attempt["event_id"]) == 2, 30,
             what="the redelivery")
    redelivered = [a for a in recur.webhooks.iterate_deliveries(hook["id"]) if a["requested_by"]]
    assert [a["delivery_id"] for a in redelivered] == [attempt["delivery_id"]]
    edited = recur.webhooks.update(hook["id"], event_types=["schedule.paused", "run.failed"])
    assert edited["event_types"] == ["run.failed", "schedule.paused"] and edited["url"] == receiver.url
    recur.webhooks.delete(hook["id"])
    with pytest.raises(NotFound):
        recur.webhooks.get(hook["id"])

    # tokens: a new one works, and is refused once revoked
    made = recur.tokens.create("ci", expires_at="2030-01-01T00:00:00Z")
    assert Client(stack.api.base, made["token"]).me()["id"] == me["id"]
    assert made["id"] in {t["id"] for t in recur.tokens.iterate()}
    assert recur.tokens.list(limit=1)["total"] >= 2
    recur.tokens.revoke(made["id"])
    with pytest.raises(Unauthorized) as refused:
        Client(stack.api.base, made["token"]).me()
    assert refused.value.status == 401 and refused.value.code == "unauthorized"

    # owners (admin): a new owner, its quotas, its audit, and what it may not do
    owner = recur.owners.create("team-b")
    assert owner["token"]["token"] and not owner["is_admin"]
    team_b = Client(stack.api.base, owner["token"]["token"])
    with pytest.raises(Forbidden):
        team_b.owners.list()
    with pytest.raises(NotFound):  # another owner's schedule is not there for it
        team_b.schedules.get(nightly["id"])
    limited = recur.owners.set_quotas(owner["id"], schedules=5)
    assert limited["quotas"]["schedules"] == {"limit": 5, "override": 5}
    assert recur.owners.set_quotas(owner["id"], schedules=None)["quotas"]["schedules"]["override"] is None
    assert owner["id"] in {o["id"] for o in recur.owners.iterate()}
    assert recur.owners.list(limit=1)["total"] >= 2
    recur.owners.delete(owner["id"])
    trail = [e["action"] for e in recur.owners.iterate_events() if e["owner_id"] == owner["id"]]
    assert {"owner.created", "owner.quotas_changed", "owner.deleted"} <= set(trail), trail
    assert recur.owners.events(limit=1)["items"]

    # calendars: made, listed, its days, a schedule on it, edited (which re-plans it), refused and deleted
    office = recur.calendars.create("office", dates=["2031-12-24/2031-12-26"], first_year=2031)
    assert office["day_count"] == 3 and recur.calendars.get(office["id"])["name"] == "office"
    assert [c["id"] for c in recur.calendars.iterate(name="office")] == [office["id"]]
    assert recur.calendars.list(limit=1)["total"] == 1
    days = recur.calendars.days(office["id"], start="2031-12-01", end="2031-12-31")
    assert [d["date"] for d in days["days"]] == ["2031-12-24", "2031-12-25", "2031-12-26"]
    yearly = recur.schedules.create(name="yearly", workflow_id=flow["id"], cron="0 9 24 12 *",
                                    start_at="2031-01-01T00:00:00Z", calendar_id=office["id"],
                                    on_calendar="shift_next")
    assert yearly["next_run_at"] == "2031-12-27T09:00:00Z"
    assert recur.calendars.update(office["id"], removed=["2031-12-26"])["day_count"] == 2
    assert recur.schedules.get(yearly["id"])["next_run_at"] == "2031-12-26T09:00:00Z"
    with pytest.raises(Conflict):
        recur.calendars.delete(office["id"])
    recur.schedules.delete(yearly["id"])
    recur.calendars.delete(office["id"])

    recur.workflows.delete(slow["id"])
    recur.schedules.delete(nightly["id"])

    # every operation of the document was called
    doc = stack.api.ok("GET", "/api/openapi.json")
    operations = _operations(doc)
    called = {op for op, pattern in operations.items() for method, path in seen
              if method == op[0] and pattern.match(path)}
    assert set(operations) - called == set()


@pytest.mark.integration
def test_the_api_errors_arrive_as_exceptions_naming_the_field(stack: Stack) -> None:
    recur = Client(stack.api.base, stack.api.token)
    flow = recur.workflows.create("errors", "builtin.noop")

    with pytest.raises(ValidationFailed) as invalid:
        recur.schedules.create(name="bad", workflow_id=flow["id"], cron="61 * * * *")
    assert invalid.value.status == 422 and invalid.value.code == "validation_error"
    assert "cron" in invalid.value.errors and invalid.value.body["errors"] == invalid.value.errors
    assert "cron:" in str(invalid.value)
    with pytest.raises(ValidationFailed) as unknown_task:
        recur.workflows.create("nothing", "no.such.task")
    assert "task" in unknown_task.value.errors

    recur.schedules.create(name="a", workflow_id=flow["id"], every="1h", key="taken")
    with pytest.raises(Conflict) as taken:
        recur.schedules.create(name="b", workflow_id=flow["id"], every="1h", key="taken")
    assert taken.value.status == 409 and "key" in taken.value.errors

    with pytest.raises(NotFound) as missing:
        recur.schedules.get("no-such-schedule")
    assert missing.value.status == 404 and missing.value.code == "not_found"

    paused = recur.schedules.create(name="p", workflow_id=flow["id"], every="1h")
    recur.schedules.pause(paused["id"])
    with pytest.raises(Conflict, match="only an active schedule can be paused"):
        recur.schedules.pause(paused["id"])

    with pytest.raises(Unauthorized):
        Client(stack.api.base, "recur_not-a-real-token-at-all").schedules.list()
    with pytest.raises(Unreachable) as nowhere:
        Client(f"http://127.0.0.1:{free_port()}", stack.api.token).health()
    assert nowhere.value.status == 0 and "cannot reach" in str(nowhere.value)

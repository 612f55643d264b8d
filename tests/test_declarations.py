"""Schedules declared in code: each declaration checked as the API checks a POST (the field named as the code
wrote it), and a plain function called through real RQ with exactly its declared arguments."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

import recur
from harness import declared_tasks
from harness.chain_driver import fresh, runs_of, step
from recur_server.declarations.sync import sync
from recur_server.declarations.wanted import checked
from recur_server.tasks import declarations, get_task
from recur_server.tasks.declarations import DeclarationError


@pytest.fixture(autouse=True)
def no_declarations() -> Iterator[None]:
    declarations.forget()
    declared_tasks.CALLS.clear()
    yield
    declarations.forget()


def refused(app, options, function=declared_tasks.send_report, **given) -> dict[str, list[str]]:
    declaration = declarations.declare(function, options, key="k", where="here", **given)
    declarations.settle()
    with pytest.raises(DeclarationError) as caught:
        checked(declaration, datetime(2026, 3, 2, tzinfo=UTC))
    assert caught.value.key == "k"
    return caught.value.errors


def test_a_bad_cron_is_refused_naming_cron(app):
    errors = refused(app, {"cron": "61 * * * *"})
    assert list(errors) == ["cron"]
    assert "61" in " ".join(errors["cron"]) or "minute" in " ".join(errors["cron"])


def test_an_alias_is_named_as_the_code_wrote_it(app):
    assert list(refused(app, {"cron": "0 9 * * *", "tz": "Mars/Olympus_Mons"})) == ["tz"]
    assert list(refused(app, {"every": "5m", "retries": -1})) == ["retries"]
    assert list(refused(app, {"every": "5m", "timeout": timedelta(days=30)})) == ["timeout"]


def test_an_unknown_option_a_missing_timing_and_two_timings_are_refused(app):
    assert refused(app, {"every": "5m", "colour": "red"}) == {"colour": ["Unknown field."]}
    assert list(refused(app, {"retries": 1})) == ["timing"]
    assert list(refused(app, {"every": "5m", "cron": "* * * * *"})) == ["timing"]


def test_a_queue_the_cluster_does_not_have_is_refused_naming_queue(app):
    assert list(refused(app, {"every": "5m", "queue": "default"})) == ["queue"]


def test_a_good_declaration_loads_as_the_api_loads_it(app):
    declaration = declarations.declare(declared_tasks.send_report, {
        "cron": "0 9 * * mon-fri", "tz": "Europe/Paris", "retries": 5, "timeout": timedelta(minutes=2),
        "only_between": "08:00-18:00", "not_on": ("sat", "sun"), "catch_up": "all", "overlap": "buffer_one",
        "alert_after_seconds": 3600, "end_at": datetime(2036, 1, 1, tzinfo=UTC), "max_concurrent_runs": 2,
    }, key="reports-1", args=[1], kwargs={"dry_run": True})
    declarations.settle()
    wanted = checked(declaration, datetime(2026, 3, 2, tzinfo=UTC))
    assert wanted.schedule["timezone"] == "Europe/Paris"
    assert wanted.schedule["max_retries"] == 5 and wanted.schedule["timeout_seconds"] == 120
    assert wanted.schedule["trigger_payload"] == {"args": [1], "kwargs": {"dry_run": True}}
    assert wanted.workflow == {"name": "reports-1", "task": "harness.declared_tasks.send_report",
                               "max_concurrent_runs": 2}


def test_what_a_declaration_refuses_before_any_app():
    with pytest.raises(DeclarationError, match="function"):
        recur.schedule(lambda: None, every="5m")
    recur.schedule(declared_tasks.no_arguments, every="5m")
    with pytest.raises(DeclarationError, match="declared twice"):
        recur.schedule(declared_tasks.send_report, every="5m", key="harness.declared_tasks.no_arguments")
    with pytest.raises(DeclarationError, match="args"):
        recur.schedule(declared_tasks.send_report, every="5m", key="x", args=[object()])
    with pytest.raises(DeclarationError, match="kwargs"):
        recur.schedule(declared_tasks.send_report, every="5m", key="y", kwargs=[1])
    with pytest.raises(DeclarationError, match="key"):
        recur.schedule(declared_tasks.send_report, every="5m", key="has space")


def test_an_event_task_takes_a_payload_and_a_plain_function_its_arguments():
    recur.every(minutes=5, args=[1])(declared_tasks.tick)
    with pytest.raises(DeclarationError, match="event task"):
        declarations.settle()
    declarations.forget()
    recur.schedule(declared_tasks.no_arguments, every="5m", payload={"a": 1})
    with pytest.raises(DeclarationError, match="payload"):
        declarations.settle()


def test_decorators_stack_either_way_round_and_leave_the_function_callable():
    declaration = declarations.declare(declared_tasks.tick, {"cron": "0 9 * * *"}, key="t")
    assert declarations.settle() == [declaration]
    assert declaration.task_name == "tests.declared.tick" and not declaration.plain
    recur.every(timedelta(minutes=5), key="plain")(declared_tasks.no_arguments)
    plain = {d.key: d for d in declarations.settle()}["plain"]
    assert plain.plain and plain.fields == {"interval_seconds": 300}
    assert get_task("harness.declared_tasks.no_arguments") is not None  # registered by its dotted path


def test_a_plain_function_runs_through_rq_with_exactly_its_arguments(chain_app, fake_clock):
    recur.schedule(declared_tasks.send_report, every="10s", args=[42],
                   kwargs={"dry_run": True, "channels": ["mail", "sms"]}, key="reports-42")
    outcome = sync(chain_app)
    assert outcome.plan is not None and outcome.plan.count("create") == 1
    schedule_id = outcome.plan.steps[0].target
    assert schedule_id is not None
    due = step(chain_app, fake_clock, extra_seconds=0.3)
    assert due is not None
    assert [r.status for r in runs_of(schedule_id)] == ["succeeded"]
    assert list(declared_tasks.CALLS) == [{
        "function": "send_report", "args": [42], "kwargs": {"dry_run": True, "channels": ["mail", "sms"]},
        "scheduled_for": due.isoformat(), "idempotency_key": f"sched-{schedule_id}-n0", "attempt": 1,
        "schedule_id": schedule_id}]
    assert fresh(schedule_id).run_count == 1


def test_context_outside_a_run_says_so():
    with pytest.raises(recur.NoRunContext):
        recur.context()


def test_a_teams_own_package_named_app_loads_under_another_name(tmp_path):
    """RECUR_TASK_MODULES's name=path form: the team's `app` package, loaded as `teamapp`, then its modules
    by that name (Recur's own package is recur_server, so nothing of the team's is shadowed)."""
    import sys

    import recur_server
    from recur_server.tasks import load_task_modules

    package = tmp_path / "app"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helpers.py").write_text("def send(account_id, *, dry_run=False):\n    return account_id, dry_run\n")
    (package / "tasks.py").write_text("import recur\nfrom .helpers import send\n\n"
                                      "recur.schedule(send, every='5m', args=[7], key='team-send')\n")
    try:
        load_task_modules([f"teamapp={package}", "teamapp.tasks"])
        assert declarations.declared_keys() == ["team-send"]
        task = get_task("teamapp.helpers.send")
        assert task is not None
        assert task({"payload": {"args": [7], "kwargs": {"dry_run": True}}}) == (7, True)  # type: ignore[typeddict-item]
        assert "app" not in sys.modules and sys.modules["recur_server"] is recur_server
    finally:
        for name in ("teamapp", "teamapp.helpers", "teamapp.tasks"):
            sys.modules.pop(name, None)


def test_the_alerts_on_runs_are_declared_as_the_api_takes_them(app):
    declaration = declarations.declare(declared_tasks.send_report, {
        "every": "5m", "long_after_seconds": timedelta(minutes=10), "late_after_seconds": 30, "failing_after": 3,
    }, key="reports-alerts", args=[1])
    declarations.settle()
    wanted = checked(declaration, datetime(2026, 3, 2, tzinfo=UTC))
    assert (wanted.schedule["long_after_seconds"], wanted.schedule["late_after_seconds"],
            wanted.schedule["failing_after"]) == (600, 30, 3)

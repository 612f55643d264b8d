"""`recur apply` takes the alerts on runs as it takes any field of a schedule: compared with the server's value,
sent only when it changed, and cleared by null."""

from __future__ import annotations

from recur_cli.applyfile import load
from recur_cli.plan import make_plan
from recur_cli.steps import UNCHANGED, UPDATE

FILE = """
workflows:
  - {name: reports, task: builtin.noop}
schedules:
  - {key: reports/nightly, name: nightly, workflow: reports, cron: "0 2 * * *",
     long_after_seconds: 900, late_after_seconds: 60, failing_after: null}
"""
ON_SERVER = {"id": "s1", "key": "reports/nightly", "name": "nightly", "workflow_id": 1, "cron": "0 2 * * *",
             "interval_seconds": None, "rrule": None, "at": None, "long_after_seconds": None,
             "late_after_seconds": 60, "failing_after": 3}


def test_apply_plans_the_alerts_on_runs_that_changed_and_nothing_else() -> None:
    workflows = [{"id": 1, "name": "reports", "task": "builtin.noop", "max_concurrent_runs": None,
                  "concurrency_policy": "wait", "breaker_threshold": None, "breaker_reset_seconds": 300, "queue": None}]
    plan = make_plan(load(FILE), workflows, [ON_SERVER], lambda every: 60, prune=False)
    (step,) = [s for s in plan.steps if s.kind == "schedule"]
    assert step.action == UPDATE
    assert step.changes == {"long_after_seconds": (None, 900), "failing_after": (3, None)}
    applied = {**ON_SERVER, "long_after_seconds": 900, "failing_after": None}
    again = make_plan(load(FILE), workflows, [applied], lambda every: 60, prune=False)
    assert [s.action for s in again.steps if s.kind == "schedule"] == [UNCHANGED]


def test_a_changed_timing_reads_as_a_field_and_its_value_not_a_python_tuple() -> None:
    """`recur apply` printed `('interval_seconds', 5400) -> ('interval_seconds', 7200)`."""
    from recur_cli.apply import _line

    workflows = [{"id": 1, "name": "reports", "task": "builtin.noop", "max_concurrent_runs": None,
                  "concurrency_policy": "wait", "breaker_threshold": None, "breaker_reset_seconds": 300, "queue": None}]
    every = FILE.replace('cron: "0 2 * * *"', "every: 2h").replace("long_after_seconds: 900, ", "")
    server = {**ON_SERVER, "cron": None, "interval_seconds": 5400, "failing_after": None}
    plan = make_plan(load(every), workflows, [server], lambda every: 7200, prune=False)
    (step,) = [s for s in plan.steps if s.kind == "schedule"]
    assert _line(step).endswith("(every: interval_seconds=5400 -> interval_seconds=7200)"), _line(step)

"""No request buys unbounded work: sparse second- and minute-level rules, which took dateutil seconds to
minutes a search, answer create, PATCH, preview, GET and explain with their right runs (or a 422 naming
rrule), every request within its budget of steps (recur_server.timing.work), on the app's real error handling."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from recur_server.timing import work

SPARSE = [
    ("FREQ=SECONDLY;BYMONTH=2;BYMONTHDAY=29;BYHOUR=23;BYMINUTE=59;BYSECOND=59", "02-29T23:59:59"),
    ("FREQ=SECONDLY;BYMONTH=12;BYMONTHDAY=31;BYHOUR=23;BYMINUTE=59", "12-31T23:59:"),
    ("FREQ=MINUTELY;BYMONTH=2;BYMONTHDAY=29;BYHOUR=23;BYMINUTE=59", "02-29T23:59:"),
    ("FREQ=SECONDLY;BYYEARDAY=366;BYHOUR=23;BYMINUTE=59;BYSECOND=59", "12-31T23:59:59"),
    ("FREQ=MINUTELY;INTERVAL=7;BYMONTH=2;BYMONTHDAY=29;BYHOUR=0", "02-29T00:"),
]


@pytest.fixture
def workflow(client) -> int:
    return int(client.post("/api/v1/workflows/", json={"name": "w", "task": "builtin.noop"}).json["id"])


@pytest.mark.parametrize(("rule", "lands"), SPARSE)
def test_sparse_rules_answer_every_request_with_their_runs(client, workflow: int, rule: str, lands: str) -> None:
    previewed = client.post("/api/v1/schedules/preview/", json={"rrule": rule, "count": 5})
    assert previewed.status_code == 200, previewed.json
    assert all(lands in t["utc"] for t in previewed.json["next_runs"]), previewed.json
    created = client.post("/api/v1/schedules/", json={"name": "s", "workflow_id": workflow, "rrule": rule})
    assert created.status_code == 201, created.json
    schedule_id = created.json["id"]
    shown = client.get(f"/api/v1/schedules/{schedule_id}/")
    assert shown.status_code == 200 and all(lands in t for t in shown.json["next_runs"]), shown.json
    changed = client.patch(f"/api/v1/schedules/{schedule_id}/",
                           json={"rrule": rule.replace("FREQ=", "INTERVAL=1;FREQ=")})
    assert changed.status_code == 200, changed.json
    explained = client.get(f"/api/v1/schedules/{schedule_id}/explain/?at=2028-06-01T00:00:00Z")
    assert explained.status_code == 200, explained.json


def test_a_rule_past_the_budget_is_a_422_naming_rrule_on_every_request(client, workflow: int, monkeypatch) -> None:
    """With a budget too small for the days between leap days, each request refuses the rule clearly."""
    monkeypatch.setattr(work, "REQUEST_STEPS", 300)
    monkeypatch.setattr(work.start, "__defaults__", (300,))
    rule = SPARSE[0][0]
    for answer in (client.post("/api/v1/schedules/preview/", json={"rrule": rule}),
                   client.post("/api/v1/schedules/", json={"name": "s", "workflow_id": workflow, "rrule": rule})):
        assert answer.status_code == 422 and list(answer.json["errors"]) == ["rrule"], answer.json
        assert "steps a request may take" in answer.json["errors"]["rrule"][0]


def test_outside_a_request_nothing_is_cut_short() -> None:
    """The chain plans with no budget: the same rule's next run is found however far it is."""
    from recur_server.timing import build_spec

    spec = build_spec({"rrule": SPARSE[0][0], "anchor_at": datetime(2028, 3, 1, tzinfo=UTC)})
    assert spec.next_after(datetime(2028, 3, 1, tzinfo=UTC)) == datetime(2032, 2, 29, 23, 59, 59, tzinfo=UTC)
    assert work.left() is None


def test_a_timing_whose_runs_all_fall_outside_its_window_is_known_to_have_none_at_once() -> None:
    """The last Monday of each month at the creation's time of day (21:10), only between 08:00 and 18:00:
    no run ever. Each of the 2,000 candidates the search passed over cost dateutil 5 ms, 10 s of a web
    process for one create (the fuzz of schedule bodies met it at night). Now decided from the times of day
    the timing can have, within a budget of ten steps. A time of day a clock change moves into the window
    (02:30 on the night Paris springs forward, only between 03:00 and 04:00) still runs there."""
    from recur_server.timing import build_spec

    created = datetime(2026, 11, 29, 21, 10, tzinfo=UTC)
    for timing in ({"rrule": "FREQ=MONTHLY;BYDAY=MO;BYSETPOS=-1"}, {"cron": "10 21 * * 1"},
                   {"rrule": "FREQ=DAILY;BYHOUR=19,20,21;BYMINUTE=0,30"}):
        spec = build_spec({**timing, "only_between": "08:00-18:00", "anchor_at": created})
        with work.budget(10):
            assert spec.next_after(created) is None, timing
    spec = build_spec({"cron": "30 2 * * *", "timezone": "Europe/Paris", "only_between": "03:00-04:00",
                       "anchor_at": datetime(2027, 1, 1, tzinfo=UTC)})
    assert spec.next_after(datetime(2027, 1, 1, tzinfo=UTC)) == datetime(2027, 3, 28, 1, 0, tzinfo=UTC)

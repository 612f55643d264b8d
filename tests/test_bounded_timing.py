"""Bounded work per request: evaluating a timing costs at most a fixed number of steps (issue 31, item 7).

A recurrence rule that never lands on a day it allows (FREQ=DAILY;INTERVAL=7;BYDAY=MO from a Tuesday) used
to cost dateutil's walk to the year 9999 on every create, PATCH and preview; some never-matching rules made
dateutil raise while iterating, answered as a 500. Both are now a 422 naming `rrule`, and sparse rules that
do match (29 February) are still accepted. No assertion here is about time: the budget counts steps.
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from app import timing
from app.timing.recurrence import RRuleTiming
from app.timing.rrulecheck import MAX_STEPS, first_occurrence

# DTSTART is the creation instant by default: the fake clock below makes it a Tuesday at 12:00:01 UTC.
TUESDAY_NOON = datetime(2026, 3, 3, 12, 0, 0, 250000, tzinfo=UTC)

NEVER_MATCHING = [
    "FREQ=DAILY;INTERVAL=7;BYDAY=MO",  # every seventh day from a Tuesday is a Tuesday: walks to 9999
    "FREQ=MINUTELY;INTERVAL=1440;BYHOUR=5",  # always 12:00: dateutil raises while iterating
    "FREQ=SECONDLY;INTERVAL=86400;BYHOUR=5",  # the same, a second at a time
]

SPARSE_BUT_MATCHING = [
    "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29",
    "FREQ=MONTHLY;BYMONTHDAY=31",
    "FREQ=DAILY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO",  # next on Monday 29 February 2044: ~6,500 daily steps
]


def _workflow(client):
    response = client.post("/api/v1/workflows/", json={"name": "wf", "task": "builtin.noop"})
    assert response.status_code == 201, response.json
    return response.json["id"]


def _assert_rrule_refused(response):
    assert response.status_code == 422, response.get_data(as_text=True)[:500]
    body = response.json
    assert body["code"] == "validation_error", body
    assert "rrule" in body["errors"], body
    return " ".join(body["errors"]["rrule"])


@pytest.mark.parametrize("rule", NEVER_MATCHING)
def test_create_with_a_never_matching_rule_is_422_naming_rrule(client, fake_clock, rule):
    fake_clock.set(TUESDAY_NOON)
    response = client.post("/api/v1/schedules/", json={"name": "s", "workflow_id": _workflow(client), "rrule": rule})
    _assert_rrule_refused(response)
    assert client.get("/api/v1/schedules/").json["total"] == 0


@pytest.mark.parametrize("rule", NEVER_MATCHING)
def test_patch_to_a_never_matching_rule_is_422_and_changes_nothing(client, fake_clock, rule):
    fake_clock.set(TUESDAY_NOON)
    created = client.post("/api/v1/schedules/", json={
        "name": "s", "workflow_id": _workflow(client), "rrule": "FREQ=DAILY"})
    assert created.status_code == 201, created.json
    _assert_rrule_refused(client.patch(f"/api/v1/schedules/{created.json['id']}/", json={"rrule": rule}))
    after = client.get(f"/api/v1/schedules/{created.json['id']}/").json
    assert after["rrule"] == "FREQ=DAILY" and after["next_run_at"] == created.json["next_run_at"]


@pytest.mark.parametrize("rule", NEVER_MATCHING)
def test_preview_of_a_never_matching_rule_is_422_naming_rrule(client, fake_clock, rule):
    fake_clock.set(TUESDAY_NOON)
    _assert_rrule_refused(client.post("/api/v1/schedules/preview/", json={"rrule": rule}))


def test_the_refusal_says_why(client, fake_clock):
    fake_clock.set(TUESDAY_NOON)
    walked = _assert_rrule_refused(client.post("/api/v1/schedules/preview/",
                                               json={"rrule": "FREQ=DAILY;INTERVAL=7;BYDAY=MO"}))
    assert f"{MAX_STEPS:,}" in walked and "may never match" in walked
    raised = _assert_rrule_refused(client.post("/api/v1/schedules/preview/",
                                               json={"rrule": "FREQ=MINUTELY;INTERVAL=1440;BYHOUR=5"}))
    assert "never" in raised


@pytest.mark.parametrize("rule", SPARSE_BUT_MATCHING)
def test_sparse_rules_that_match_are_still_accepted(client, fake_clock, rule):
    fake_clock.set(TUESDAY_NOON)
    preview = client.post("/api/v1/schedules/preview/", json={"rrule": rule, "count": 2})
    assert preview.status_code == 200, preview.json
    assert len(preview.json["next_runs"]) == 2
    created = client.post("/api/v1/schedules/", json={"name": "s", "workflow_id": _workflow(client), "rrule": rule})
    assert created.status_code == 201, created.json
    assert created.json["next_run_at"] == preview.json["next_runs"][0]["utc"]


def test_a_rule_matching_from_its_own_monday_is_accepted(client, fake_clock):
    """The same rule is fine when DTSTART is a Monday: the refusal is about the rule with its DTSTART."""
    fake_clock.set(TUESDAY_NOON)
    preview = client.post("/api/v1/schedules/preview/", json={
        "rrule": "FREQ=DAILY;INTERVAL=7;BYDAY=MO", "anchor_date": "2026-03-02T09:00:00Z", "count": 2})
    assert preview.status_code == 200, preview.json
    assert [r["utc"] for r in preview.json["next_runs"]] == ["2026-03-09T09:00:00Z", "2026-03-16T09:00:00Z"]


# --- the timing package alone ----------------------------------------------------------------------------

@pytest.mark.parametrize("rule", NEVER_MATCHING)
def test_parse_refuses_never_matching_rules(rule):
    with pytest.raises(timing.TimingError) as refused:
        RRuleTiming.parse(rule, ZoneInfo("UTC"), TUESDAY_NOON.replace(microsecond=0), start_is_run=False)
    assert refused.value.field == "rrule"


def test_a_match_further_away_than_the_budget_is_undecided_not_none():
    """The walk gives up after MAX_STEPS: a small budget cannot reach 29 February 2044, a big one can."""
    from dateutil.rrule import rrulestr

    rule = rrulestr("FREQ=DAILY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO", dtstart=datetime(2026, 3, 3, 12))
    assert first_occurrence(rule, datetime(2026, 3, 3, 12)) == datetime(2044, 2, 29, 12)
    with pytest.raises(timing.TimingError, match="may never match"):
        first_occurrence(rule, datetime(2026, 3, 3, 12), steps=1000)


def test_next_after_never_gives_up_on_a_rule_that_matched():
    """From a Monday 29 February the rule matches at once; its next match is 28 years of daily steps away.
    Only a request's first search is bounded: the chain finds the far match whatever the budget, rather
    than taking a schedule whose next run is far off for one that ended (a 'done' it never was)."""
    utc, leap_monday = ZoneInfo("UTC"), datetime(2044, 2, 29, 9, tzinfo=UTC)
    rule = "FREQ=DAILY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO"
    for steps in (MAX_STEPS, 2_000):
        timing_ = RRuleTiming.parse(rule, utc, leap_monday, steps=steps)
        assert timing_.next_after(leap_monday) == datetime(2072, 2, 29, 9, tzinfo=UTC)


def test_a_second_level_rule_across_its_excluded_hours_is_found_at_parse_and_after():
    """FREQ=SECONDLY;BYHOUR=1,2,3 from 04:00: the next run is 21 hours of seconds away, which dateutil skips
    within its own loop; the budget counts its periods' calls, not every second."""
    utc, four = ZoneInfo("UTC"), datetime(2026, 3, 3, 4, tzinfo=UTC)
    timing_ = RRuleTiming.parse("FREQ=SECONDLY;BYHOUR=1,2,3", utc, four)
    assert timing_.next_after(four) == datetime(2026, 3, 4, 1, tzinfo=UTC)

"""Bounded work per request (issue 31, item 7): a recurrence rule that never lands on a period it allows
(FREQ=DAILY;INTERVAL=7;BYDAY=MO from a Tuesday) used to cost dateutil's walk to the year 9999 on every create,
PATCH and preview; some never-matching rules made dateutil raise while iterating, answered as a 500. Both are
now a 422 naming `rrule`, decided from the rule itself (its INTERVAL against its filters), and sparse rules
that do match (29 February) are still accepted. No assertion here is about time.
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from recur_server import timing
from recur_server.timing.recurrence import RRuleTiming
from recur_server.timing.rrulecheck import check_reachable

# DTSTART is the creation instant by default: the fake clock below makes it a Tuesday at 12:00:01 UTC.
TUESDAY_NOON = datetime(2026, 3, 3, 12, 0, 0, 250000, tzinfo=UTC)

NEVER_MATCHING = [
    "FREQ=DAILY;INTERVAL=7;BYDAY=MO",  # every seventh day from a Tuesday is a Tuesday: walks to 9999
    "FREQ=HOURLY;INTERVAL=24;BYHOUR=5",  # always 12:00
    "FREQ=MINUTELY;INTERVAL=10080;BYDAY=SU",  # a week of minutes: always a Tuesday
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
    assert "never land" in walked and "never match" in walked
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


@pytest.mark.parametrize(("rule", "reachable"), [
    ("FREQ=DAILY;INTERVAL=14;BYDAY=TU", True),  # from a Tuesday
    ("FREQ=DAILY;INTERVAL=3;BYDAY=MO", True),  # 3 and 7 are coprime: every weekday in turn
    ("FREQ=HOURLY;INTERVAL=5;BYHOUR=3", True),
    ("FREQ=HOURLY;INTERVAL=48;BYHOUR=12;BYDAY=TH", True),  # Tuesday, Thursday, Saturday, ... at 12:00
    ("FREQ=HOURLY;INTERVAL=48;BYHOUR=12;BYDAY=WE", True),  # and the next week Wednesday
    ("FREQ=HOURLY;INTERVAL=24;BYHOUR=12;BYDAY=MO,FR", True),
    ("FREQ=HOURLY;INTERVAL=168;BYDAY=WE", False),  # a week of hours: always a Tuesday
    ("FREQ=DAILY;INTERVAL=14;BYDAY=MO,WE", False),
    ("FREQ=DAILY;INTERVAL=7;BYDAY=MO", False),
    ("FREQ=SECONDLY;BYDAY=SU;BYHOUR=23;BYMINUTE=59;BYSECOND=59", True),
])
def test_an_interval_is_judged_against_the_filters_it_must_land_on(rule: str, reachable: bool) -> None:
    from dateutil.rrule import rrulestr

    parsed = rrulestr(rule, dtstart=datetime(2026, 3, 3, 12))  # a Tuesday, 12:00:00
    if reachable:
        check_reachable(parsed)
        assert parsed.after(datetime(2026, 3, 3, 12), inc=True) is not None
    else:
        with pytest.raises(timing.TimingError, match="never land"):
            check_reachable(parsed)


def test_next_after_finds_a_match_28_years_away():
    """From a Monday 29 February the rule matches at once; its next match is 28 years of daily steps away:
    the chain finds it, rather than taking a schedule whose next run is far off for one that ended."""
    utc, leap_monday = ZoneInfo("UTC"), datetime(2044, 2, 29, 9, tzinfo=UTC)
    rule = "FREQ=DAILY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO"
    assert RRuleTiming.parse(rule, utc, leap_monday).next_after(leap_monday) == datetime(2072, 2, 29, 9, tzinfo=UTC)


def test_a_second_level_rule_across_its_excluded_hours_is_found_at_parse_and_after():
    """FREQ=SECONDLY;BYHOUR=1,2,3 from 04:00: the next run is 21 hours of seconds away."""
    utc, four = ZoneInfo("UTC"), datetime(2026, 3, 3, 4, tzinfo=UTC)
    timing_ = RRuleTiming.parse("FREQ=SECONDLY;BYHOUR=1,2,3", utc, four)
    assert timing_.next_after(four) == datetime(2026, 3, 4, 1, tzinfo=UTC)

"""Why did (or didn't) it run? The pure parts, with literal datetimes: the timing's nearest tick and what passes
over it (recur_server.timing.nearest, recur_server.timing.ruled_out), and each answer of
recur_server.policies.explain."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from recur_server.policies.explain import BreakerFact, PauseFact, RunFact, ScheduleFacts, TickFacts, explain
from recur_server.services.explain import HORIZON, tick_facts
from recur_server.timing import build_spec
from recur_server.timing.nearest import nearest_tick, tick_before

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
T = datetime(2026, 3, 9, 9, 0, tzinfo=UTC)  # a Monday
CREATED = datetime(2026, 1, 1, tzinfo=UTC)
ACTIVE = ScheduleFacts("active", CREATED, next_run_at=datetime(2026, 3, 11, 9, 0, tzinfo=UTC))
TICK = TickFacts(T, T, next_tick=T)


def _weekday_nine(**fields: object):  # type: ignore[no-untyped-def]
    return build_spec({"cron": "0 9 * * *", "timezone": "UTC", **fields})


def _run(run_id: str, status: str, scheduled_for: datetime, started: float, finished: float | None = None,
         **more: object) -> RunFact:
    begin = scheduled_for + timedelta(seconds=started)
    end = None if finished is None else scheduled_for + timedelta(seconds=finished)
    return RunFact(run_id, status, scheduled_for, begin, end, str(more.pop("trigger", "schedule")), **more)  # type: ignore[arg-type]


# --- the timing's nearest tick and what passes over it ----------------------------------------------------------

def test_the_last_tick_before_an_instant_and_the_nearest_one() -> None:
    spec = _weekday_nine()
    assert tick_before(spec.next_after, T, HORIZON) == T - timedelta(days=1)
    assert tick_before(spec.next_after, T + timedelta(seconds=1), HORIZON) == T
    assert nearest_tick(spec.next_after, T + timedelta(hours=11), HORIZON) == T  # 11 h after, 13 h before the next
    assert nearest_tick(spec.next_after, T + timedelta(hours=13), HORIZON) == T + timedelta(days=1)
    every_second = build_spec({"interval_seconds": 1, "anchor_at": T, "timezone": "UTC"})
    assert tick_before(every_second.next_after, T + timedelta(seconds=90, milliseconds=500), HORIZON) == \
        T + timedelta(seconds=90)
    yearly = build_spec({"cron": "0 0 1 1 *", "timezone": "UTC"})
    assert tick_before(yearly.next_after, T, timedelta(days=30)) is None  # beyond the horizon


def test_a_tick_of_the_spec_is_explained_as_asked() -> None:
    assert tick_facts(_weekday_nine(), T) == TickFacts(T, T, next_tick=T)
    off = tick_facts(_weekday_nine(), T + timedelta(minutes=20))
    assert (off.nominal, off.ruled_out) == (T, None)


def test_what_passes_over_a_tick_of_the_timing() -> None:
    saturday = datetime(2026, 3, 7, 9, 0, tzinfo=UTC)
    facts = tick_facts(_weekday_nine(not_on=["sat", "sun"]), saturday)
    assert (facts.nominal, facts.ruled_out, facts.next_tick) == (saturday, "excluded_weekday", T)
    facts = tick_facts(_weekday_nine(start_at=datetime(2026, 3, 20, tzinfo=UTC)), T)
    assert (facts.ruled_out, facts.next_tick) == ("before_start", datetime(2026, 3, 20, 9, 0, tzinfo=UTC))
    facts = tick_facts(_weekday_nine(end_at=datetime(2026, 3, 1, tzinfo=UTC)), T)
    assert (facts.ruled_out, facts.next_tick) == ("after_end", None)
    hourly = build_spec({"cron": "0 * * * *", "timezone": "Europe/Berlin", "only_between": "08:00-18:00"})
    evening = datetime(2026, 3, 9, 19, 0, tzinfo=UTC)  # 20:00 in Berlin
    facts = tick_facts(hourly, evening)
    assert (facts.ruled_out, facts.next_tick) == ("outside_window", datetime(2026, 3, 10, 7, 0, tzinfo=UTC))


def test_a_calendar_day_is_skipped_or_its_tick_moved() -> None:
    holiday = {"calendar_days": [date(2026, 3, 9)]}
    facts = tick_facts(_weekday_nine(**holiday), T)
    assert (facts.ruled_out, facts.moved_to, facts.next_tick) == ("calendar_day", None, T + timedelta(days=1))
    moved = tick_facts(_weekday_nine(**holiday, on_calendar="shift_next", not_on=["tue"]), T)
    assert (moved.ruled_out, moved.moved_to) == ("calendar_day", T + timedelta(days=2))  # Tuesday is excluded
    answer = explain(moved, ACTIVE, [], [], None, None, NOW)
    assert answer.kind == "not_a_tick" and "moved to 2026-03-11T09:00:00+00:00" in answer.summary


# --- the answers -----------------------------------------------------------------------------------------------

def test_it_ran_late_after_a_retry() -> None:
    runs = [_run("a", "failed", T, 2.5, 3, repeat_number=4),
            _run("b", "succeeded", T + timedelta(seconds=10), 0.1, 1, repeat_number=4, retry_number=1,
                 trigger="retry"),
            _run("c", "succeeded", T + timedelta(days=1), 0.1, 1, repeat_number=5)]
    answer = explain(TICK, ACTIVE, runs, [], None, None, NOW)
    assert (answer.kind, answer.run.id if answer.run else None, answer.attempts, answer.late_seconds) == \
        ("ran", "b", 2, 2.5)
    assert answer.summary == "ran: succeeded after 2 attempts, started 2.5 s after its time"


def test_it_is_running_now() -> None:
    answer = explain(TICK, ACTIVE, [_run("a", "running", T, 0.2, repeat_number=1)], [], None, None,
                     T + timedelta(minutes=1))
    assert (answer.kind, answer.late_seconds) == ("running", 0.2)


def test_skipped_by_overlap_names_the_run_that_held_it() -> None:
    holder = _run("long", "succeeded", T - timedelta(minutes=1), 0, 150, repeat_number=3)
    gap = _run("gap", "skipped", T, 90, 90, reason="overlap", ticks=2)
    answer = explain(TICK, ACTIVE, [gap], [holder], None, None, NOW)
    assert (answer.kind, answer.reason, answer.held_by) == ("skipped", "overlap", holder)
    assert "(run long)" in answer.summary


def test_a_gap_row_of_many_ticks_covers_the_ones_after_its_first() -> None:
    gap = _run("gap", "missed", T - timedelta(hours=3), 4 * 3600, 4 * 3600, reason="catch_up_skip", ticks=4)
    answer = explain(TICK, ACTIVE, [gap], [], None, None, NOW)
    assert (answer.kind, answer.reason, answer.run) == ("missed", "catch_up_skip", gap)
    assert explain(TICK, ACTIVE, [_run("one", "missed", T - timedelta(hours=1), 7200, 7200, ticks=1)], [], None,
                   None, NOW).kind == "not_recorded"  # a gap of one earlier tick is not this one's


def test_paused_then_and_by_whom() -> None:
    pause = PauseFact(True, T - timedelta(hours=2), "ops-team", "vendor outage")
    answer = explain(TICK, ACTIVE, [], [], pause, None, NOW)
    assert (answer.kind, answer.paused_by, answer.pause_note) == ("paused", "ops-team", "vendor outage")
    resumed = PauseFact(False, T - timedelta(hours=1), "ops-team")
    assert explain(TICK, ACTIVE, [], [], resumed, None, NOW).kind == "not_recorded"


def test_the_breaker_was_open() -> None:
    breaker = BreakerFact("open", T - timedelta(minutes=5), "3 consecutive failed runs (threshold 3)")
    answer = explain(TICK, ACTIVE, [], [], None, breaker, NOW)
    assert (answer.kind, answer.breaker_since) == ("breaker_open", T - timedelta(minutes=5))
    # the tick the breaker turned away is recorded skipped: the row answers, with since when it was open
    gap = _run("gap", "skipped", T, 0.1, 0.1, reason="breaker", ticks=1)
    answer = explain(TICK, ACTIVE, [gap], [], None, breaker, NOW)
    assert (answer.kind, answer.reason, answer.breaker_since) == ("skipped", "breaker", T - timedelta(minutes=5))
    assert answer.summary == "skipped: its workflow's circuit breaker was open"


def test_before_the_schedule_existed() -> None:
    young = ScheduleFacts("active", T + timedelta(hours=1), next_run_at=T + timedelta(days=1))
    assert explain(TICK, young, [], [], None, None, NOW).kind == "before_created"


def test_due_and_waiting_for_a_worker() -> None:
    stuck = ScheduleFacts("active", CREATED, next_run_at=T)
    answer = explain(TICK, stuck, [], [], None, None, T + timedelta(minutes=3))
    assert (answer.kind, answer.next_tick) == ("waiting", T)


def test_pruned_runs_are_said_to_be() -> None:
    kept = ScheduleFacts("active", CREATED, next_run_at=NOW + timedelta(hours=1), runs_kept_since=T + timedelta(days=1))
    answer = explain(TICK, kept, [], [], None, None, NOW)
    assert answer.kind == "not_recorded" and "pruned" in answer.summary


def test_ahead_it_will_run_unless_the_schedule_stopped() -> None:
    ahead = TickFacts(NOW + timedelta(days=2), NOW + timedelta(days=2), next_tick=NOW + timedelta(days=2))
    assert explain(ahead, ACTIVE, [], [], None, None, NOW).kind == "will_run"
    paused = ScheduleFacts("paused", CREATED, None, pause_note="holidays", paused_at=NOW - timedelta(hours=1))
    answer = explain(ahead, paused, [], [], None, None, NOW)
    assert (answer.kind, answer.summary) == ("will_not_run", "the schedule is paused: holidays")


def test_the_nearest_tick_and_an_edited_timing_are_noted() -> None:
    near = TickFacts(T + timedelta(minutes=7), T, next_tick=T)
    edited = ScheduleFacts("active", CREATED, next_run_at=NOW, timing_changed_at=T + timedelta(hours=2))
    answer = explain(near, edited, [_run("a", "succeeded", T, 0.4, 2, repeat_number=1)], [], None, None, NOW)
    assert answer.kind == "ran" and len(answer.notes) == 2 and "nearest" in answer.notes[0]
    assert explain(TickFacts(T, None, next_tick=None), ACTIVE, [], [], None, None, NOW).kind == "not_a_tick"

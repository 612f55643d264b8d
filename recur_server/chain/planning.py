"""From a schedule row to the next nominal time and the pending link. Pure apart from reading the row."""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from recur_server import timing
from recur_server.calendars.models import calendar_days
from recur_server.chain.redis_links import LinkPlan
from recur_server.infra.clock import ceil_second
from recur_server.models import Schedule


def spec_of(schedule: Schedule) -> timing.Spec:
    # anchor_explicit: without anchor_date an rrule's DTSTART is the creation instant, never itself a run
    fields = {**schedule.timing_fields(), "anchor_explicit": bool(schedule.anchor_explicit)}
    if schedule.calendar_id is not None:  # its calendar's days, the same frozenset while the calendar stands
        days = calendar_days(schedule.calendar_id)
        if days is None:
            raise timing.TimingError("calendar_id", f"calendar {schedule.calendar_id} does not exist")
        fields.update(calendar_days=days, on_calendar=schedule.on_calendar)
    key = tuple((name, tuple(v) if isinstance(v, list) else v) for name, v in fields.items())
    try:
        return _cached_spec(key)
    except TypeError:  # an unhashable value (not a valid timing either): build_spec says what is wrong
        return timing.build_spec(fields)


@lru_cache(maxsize=4096)
def _cached_spec(fields: tuple[tuple[str, Any], ...]) -> timing.Spec:
    """Specs are immutable and a pure function of the timing columns: each worker parses a schedule's
    timing once, not at every run (an invalid one raises, and exceptions are not cached)."""
    return timing.build_spec({name: list(v) if isinstance(v, tuple) else v for name, v in fields})


def default_anchor(schedule: Schedule, now: datetime) -> datetime:
    """The anchor of a schedule created (or resumed) now without an explicit one.

    A sub-day interval keeps now's milliseconds: schedules created at different moments then fire at
    different moments, instead of all those created within one second firing in one burst. Whole-day
    intervals and rrules (whose anchor is DTSTART) keep whole seconds, as wall-clock times do.
    """
    if schedule.interval_seconds and schedule.interval_seconds % 86400:
        return timing.to_utc(now, "now")
    return ceil_second(now)


def first_nominal(schedule: Schedule, now: datetime) -> datetime | None:
    """The first tick of a new or resumed schedule: never at once.

    An interval without an explicit anchor is anchored on the creation or resume instant (see
    default_anchor), so its first tick is exactly one interval later. An rrule without one takes the
    creation instant as DTSTART, which its spec never returns as a run (see spec_of).
    """
    spec = spec_of(schedule)
    if schedule.interval_seconds and not schedule.anchor_explicit and schedule.anchor_at is not None:
        return spec.next_after(max(now, schedule.anchor_at))
    return spec.next_after(now)


def next_nominal(schedule: Schedule, after_nominal: datetime, now: datetime) -> datetime | None:
    """Fixed rate: the next grid slot after the tick just run; slots already past are skipped, not run late."""
    return spec_of(schedule).next_after(max(now, after_nominal))


def backoff_base_seconds(schedule: Schedule, nominal: datetime) -> int:
    """The interval that retries back off from: the schedule's interval, or for calendar kinds the
    gap between this tick and the one after it (at least one second)."""
    if schedule.interval_seconds:
        return schedule.interval_seconds
    following = spec_of(schedule).next_after(nominal)
    if following is None:
        return 60
    return max(1, int((following - nominal).total_seconds()))


def retry_at(schedule: Schedule, nominal: datetime, now: datetime) -> datetime:
    delay = timing.retry_delay(backoff_base_seconds(schedule, nominal), schedule.current_retry)
    return timing.to_utc(now, "now") + timedelta(seconds=delay)


def draws_jitter(jitter_seconds: int | None, retry: int) -> bool:
    """Whether this attempt's link is delayed by jitter (first attempts only); planning it needs the spec."""
    return bool(jitter_seconds) and retry == 0


def link_plan(schedule: Schedule) -> LinkPlan:
    """The link that should be pending for this schedule's current state."""
    assert schedule.next_run_at is not None
    nominal = schedule.next_run_at
    delay = 0
    if draws_jitter(schedule.jitter_seconds, schedule.current_retry):
        delay = timing.jitter_delay(
            schedule.id, nominal, schedule.jitter_seconds, spec_of(schedule).next_after(nominal)
        )
    return plain_link_plan(
        schedule.id, schedule.revision, schedule.current_repeat, schedule.current_retry, nominal,
        schedule.timeout_seconds, delay, schedule.queue,
    )


def plain_link_plan(
    schedule_id: str, revision: int, repeat: int, retry: int, nominal: datetime, timeout_seconds: int, delay: int = 0,
    queue: str | None = None,
) -> LinkPlan:
    """link_plan from the columns themselves, for callers that read rows in bulk (no jitter to draw)."""
    return LinkPlan(
        schedule_id=schedule_id,
        revision=revision,
        repeat=repeat,
        retry=retry,
        scheduled_for=nominal,
        due_at=nominal + timedelta(seconds=delay),
        timeout_seconds=timeout_seconds,
        queue=queue,
    )

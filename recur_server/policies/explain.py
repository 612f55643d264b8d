"""Why did (or didn't) a schedule run at a time? A pure answer from facts gathered elsewhere
(recur_server.services.explain):
what the timing makes of the time, the runs recorded around it, the schedule's pauses and state, and its
workflow's breaker. Time is an argument (`now`); nothing here reads a clock or a database.

The answer's `kind`, in the order they are decided:
  not_a_tick   the timing makes a tick near it, but a constraint passes over it (before start_at, after end_at,
               an excluded weekday, outside only_between, a calendar day: skipped, or moved to `moved_to`)
  ran          a run stands for the tick (its outcome, how late it started, its attempts)
  running      a run of the tick is going now
  missed       a row records the tick missed (catch-up: skip, window, limit)
  skipped      a row records the tick skipped (overlap: `held_by` the run that was going; a full workflow;
               the breaker)
  before_created  the tick is not after the schedule's creation (its first tick is the first after it)
  paused       the schedule was paused at the tick (when, by whom, the note)
  breaker_open the workflow's breaker was open at the tick
  not_recorded the tick is past and nothing says what happened (its runs pruned, or the schedule had stopped)
  waiting      the tick is due and the chain has not reached it (no worker took it yet)
  will_run     the tick is ahead, and the schedule is active: it runs then (`next_run_at` is the next of them)
  will_not_run the tick is ahead but the schedule is paused, done, dead or invalid
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

RAN_STATUSES = ("succeeded", "failed", "timed_out", "cancelled")
# A retry's run is recorded with its own due time: attempts of one tick share its repeat number.
GAP_STATUSES = ("missed", "skipped")


@dataclass(frozen=True)
class TickFacts:
    """What the timing makes of the asked time: the tick explained (`nominal`: the asked time itself or the
    nearest tick of the timing to it), whether the spec keeps it, and if not which constraint passes over it."""

    asked: datetime
    nominal: datetime | None  # None: the timing has no tick near the asked time at all
    ruled_out: str | None = None  # recur_server.timing.ruled_out's reason
    moved_to: datetime | None = None  # a calendar's shift of the tick
    next_tick: datetime | None = None  # the spec's first tick at or after the nominal one


@dataclass(frozen=True)
class RunFact:
    id: str
    status: str
    scheduled_for: datetime
    started_at: datetime
    finished_at: datetime | None
    trigger: str
    repeat_number: int | None = None
    retry_number: int = 0
    reason: str | None = None
    ticks: int | None = None
    error: str | None = None


@dataclass(frozen=True)
class PauseFact:
    """The schedule's newest pause or resume at or before the tick (from its audit trail)."""

    paused: bool
    at: datetime
    by: str
    note: str | None = None


@dataclass(frozen=True)
class BreakerFact:
    """The workflow's breaker's newest transition at or before the tick."""

    state: str
    since: datetime
    reason: str


@dataclass(frozen=True)
class ScheduleFacts:
    status: str
    created_at: datetime
    next_run_at: datetime | None
    pause_note: str | None = None
    paused_at: datetime | None = None
    runs_kept_since: datetime | None = None  # older runs are pruned (retention)
    timing_changed_at: datetime | None = None  # the timing was edited after the tick: explained with today's


@dataclass(frozen=True)
class Explanation:
    kind: str
    summary: str
    nominal: datetime | None
    run: RunFact | None = None  # the run that stands for the tick (ran, running), or the row of a gap
    attempts: int = 0
    late_seconds: float | None = None
    reason: str | None = None
    held_by: RunFact | None = None
    paused_by: str | None = None
    paused_at: datetime | None = None
    pause_note: str | None = None
    breaker_since: datetime | None = None
    moved_to: datetime | None = None
    next_tick: datetime | None = None
    notes: tuple[str, ...] = field(default=())


def explain(tick: TickFacts, schedule: ScheduleFacts, runs: Sequence[RunFact], running_before: Sequence[RunFact],
            pause: PauseFact | None, breaker: BreakerFact | None, now: datetime) -> Explanation:
    """`runs`: the schedule's runs recorded at or after the tick (oldest first, a bounded page); `running_before`:
    those started before it (newest first, a bounded page), for the run that held a skipped tick."""
    notes = _notes(tick, schedule)
    nominal = tick.nominal
    if nominal is None:
        return Explanation("not_a_tick", "the timing has no tick near this time", None, next_tick=tick.next_tick,
                           notes=notes)
    if tick.ruled_out is not None:
        return Explanation("not_a_tick", _ruled_out_text(tick), nominal, reason=tick.ruled_out,
                           moved_to=tick.moved_to, next_tick=tick.next_tick, notes=notes)
    attempts = [r for r in runs if r.scheduled_for == nominal and r.status not in GAP_STATUSES]
    if attempts:
        first = attempts[0]
        tries = _attempts_of(first, runs)
        last = tries[-1]
        late = round((first.started_at - nominal).total_seconds(), 3)
        kind = "running" if last.status == "running" else "ran"
        what = "is running" if kind == "running" else f"ran: {last.status}"
        more = f" after {len(tries)} attempts" if len(tries) > 1 else ""
        return Explanation(kind, f"{what}{more}, started {late:g} s after its time", nominal, run=last,
                           attempts=len(tries), late_seconds=late, notes=notes)
    gap = _gap_covering(nominal, runs)
    if gap is not None:
        held = _holder(nominal, running_before) if gap.reason in ("overlap", "overlap_limit") else None
        opened = breaker.since if gap.reason == "breaker" and breaker is not None and breaker.state != "closed" \
            else None
        return Explanation(gap.status, _gap_text(gap, held), nominal, run=gap, reason=gap.reason, held_by=held,
                           breaker_since=opened, notes=notes)
    if nominal <= schedule.created_at:  # a schedule's first tick is the first strictly after its creation
        return Explanation("before_created", "the schedule did not exist yet", nominal, notes=notes)
    if nominal <= now:
        if pause is not None and pause.paused:
            return Explanation("paused", f"the schedule was paused then, by {pause.by}", nominal,
                               paused_by=pause.by, paused_at=pause.at, pause_note=pause.note, notes=notes)
        if breaker is not None and breaker.state == "open":
            return Explanation("breaker_open", f"its workflow's breaker was open: {breaker.reason}", nominal,
                               reason=breaker.reason, breaker_since=breaker.since, notes=notes)
        if schedule.status == "active" and schedule.next_run_at is not None and nominal >= schedule.next_run_at:
            return Explanation("waiting", "it is due and has not started yet: no worker has taken it", nominal,
                               next_tick=tick.next_tick, notes=notes)
        if schedule.runs_kept_since is not None and nominal < schedule.runs_kept_since:
            return Explanation("not_recorded", "its runs of that time are pruned (retention)", nominal, notes=notes)
        return Explanation("not_recorded", "no run or gap is recorded for it", nominal, notes=notes)
    if schedule.status != "active":
        why = f"the schedule is {schedule.status}" + (f": {schedule.pause_note}" if schedule.pause_note else "")
        return Explanation("will_not_run", why, nominal, paused_at=schedule.paused_at,
                           pause_note=schedule.pause_note, notes=notes)
    return Explanation("will_run", "it will run then", nominal, next_tick=tick.next_tick, notes=notes)


def _attempts_of(first: RunFact, runs: Sequence[RunFact]) -> list[RunFact]:
    """The tick's attempts: its first run and the retries with its repeat number, in order."""
    if first.repeat_number is None:
        return [first]
    same = [r for r in runs if r.repeat_number == first.repeat_number and r.trigger == "retry"]
    return [first, *sorted(same, key=lambda r: r.retry_number)]


def _gap_covering(nominal: datetime, runs: Sequence[RunFact]) -> RunFact | None:
    """A missed or skipped row whose ticks run from its scheduled_for to before it was recorded covers it."""
    for row in runs:
        covers = row.scheduled_for == nominal or (row.ticks or 1) > 1
        if row.status in GAP_STATUSES and row.scheduled_for <= nominal <= row.started_at and covers:
            return row
    return None


def _holder(nominal: datetime, running_before: Sequence[RunFact]) -> RunFact | None:
    """The run that was going at the tick: started before it and not finished by it."""
    for run in running_before:
        if run.status in GAP_STATUSES:
            continue
        if run.started_at <= nominal and (run.finished_at is None or run.finished_at >= nominal):
            return run
    return None


_REASONS = {
    "catch_up_skip": "missed while nothing ran it, and catch_up is skip (or latest ran a newer tick)",
    "catch_up_window": "missed, and older than catch_up_window_seconds when a worker came to it",
    "catch_up_limit": "missed, beyond catch_up_limit",
    "overlap": "skipped: a run of the schedule was still going (overlap skip)",
    "overlap_limit": "skipped: beyond what overlap buffers",
    "concurrency": "skipped: its workflow had max_concurrent_runs going (concurrency_policy skip)",
    "breaker": "skipped: its workflow's circuit breaker was open",
}
_RULED_OUT = {
    "before_start": "before the schedule's start_at",
    "after_end": "after the schedule's end_at",
    "excluded_weekday": "on a weekday the schedule's not_on excludes",
    "outside_window": "outside the schedule's only_between window",
}


def _gap_text(gap: RunFact, held: RunFact | None) -> str:
    text = _REASONS.get(gap.reason or "", f"{gap.status}: {gap.reason}")
    return f"{text} (run {held.id})" if held is not None else text


def _ruled_out_text(tick: TickFacts) -> str:
    if tick.ruled_out == "calendar_day":
        if tick.moved_to is not None:
            return f"not a tick: on a day of its calendar, moved to {tick.moved_to.isoformat()}"
        return "not a tick: on a day of its calendar, skipped"
    return f"not a tick: {_RULED_OUT.get(tick.ruled_out or '', tick.ruled_out or '')}"


def _notes(tick: TickFacts, schedule: ScheduleFacts) -> tuple[str, ...]:
    notes = []
    if tick.nominal is not None and tick.nominal != tick.asked:
        notes.append("no tick at the asked time: this is the nearest one")
    if schedule.timing_changed_at is not None:
        notes.append(f"the timing was edited at {schedule.timing_changed_at.isoformat()}, after this time: "
                     "the answer reads it with today's timing")
    return tuple(notes)

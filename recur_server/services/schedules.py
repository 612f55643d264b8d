"""Operations on schedules that the API (and the CLI) perform: each commits, then hands off to Redis. Those that
change one schedule take its id, or its row as the caller read it FOR UPDATE (the API reads it once, through
the owner's scope)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Select, delete, select
from sqlalchemy.exc import IntegrityError

from recur_server import timing
from recur_server.auth import audit
from recur_server.calendars.models import Calendar
from recur_server.chain import planning
from recur_server.chain.handoff import hand_off_or_leave_to_recovery, withdraw, withdraw_each
from recur_server.infra import transaction
from recur_server.infra.clock import ceil_second
from recur_server.infra.extensions import db, get_redis
from recur_server.models import OnExhausted, Run, Schedule, ScheduleStatus, Workflow
from recur_server.notify import events, outbox
from recur_server.policies import CatchUpPolicy, OverlapPolicy
from recur_server.services import follow, quotas

# Request fields that set the timing columns, and the columns they set.
_KINDS = ("interval_seconds", "every", "cron", "rrule", "at", "after_seconds")
_KIND_COLUMNS = ("interval_seconds", "cron", "rrule", "at")
_CONSTRAINT_COLUMNS = ("timezone", "day_or", "start_at", "end_at", "only_between", "not_on", "jitter_seconds",
                       "calendar_id", "on_calendar")
_PLAIN_COLUMNS = (
    "name", "key", "description", "workflow_id", "owner_id", "trigger_node_id", "total_repeats", "max_retries",
    "timeout_seconds", "trigger_payload", "on_exhausted", "catch_up", "catch_up_window_seconds", "catch_up_limit",
    "overlap", "alert_after_seconds", "keep_runs_days", "long_after_seconds", "late_after_seconds", "failing_after",
)


class Conflict(Exception):
    """The schedule is not in a state that allows the operation (a 409: the request collides with its state)."""


class DuplicateKey(Exception):
    """Another schedule of the same owner has this key (a 409); `key` None: one of several being made."""

    def __init__(self, key: str | None) -> None:
        super().__init__(f"a schedule with key {key!r} exists already" if key else "another request took a key")
        self.key = key


class Invalid(Exception):
    """A field's value is not acceptable: carries {field: [messages]} (a 422)."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__(errors)
        self.errors = errors


def timing_columns(data: dict[str, Any], now: datetime) -> dict[str, Any]:
    """Turn request timing fields into column values: `every` -> interval, `after_seconds` -> `at`."""
    given = [k for k in _KINDS if data.get(k) is not None]
    out: dict[str, Any] = {}
    if given:
        if len(given) > 1:
            raise Invalid({"timing": [f"give exactly one kind of timing; got {' and '.join(given)}"]})
        out = dict.fromkeys(_KIND_COLUMNS)
        kind = given[0]
        if kind == "every":
            out["interval_seconds"] = _checked(lambda: timing.parse_every(data["every"]))
        elif kind == "after_seconds":
            out["at"] = ceil_second(now) + timedelta(seconds=data["after_seconds"])
        else:
            out[kind] = data[kind]
        if kind == "at":
            _checked(lambda: timing.validate_not_past(ceil_second(data["at"]), now))
            out["at"] = ceil_second(data["at"])
    for column in _CONSTRAINT_COLUMNS:
        if column in data:
            out[column] = data[column]
    if out.get("timezone") is None and "timezone" in out:
        out["timezone"] = "UTC"
    if "anchor_date" in data:
        out["anchor_at"] = ceil_second(data["anchor_date"]) if data["anchor_date"] else None
        out["anchor_explicit"] = data["anchor_date"] is not None
    for column in ("start_at", "end_at"):
        if out.get(column) is not None:
            out[column] = ceil_second(out[column])
    return out


def built(data: dict[str, Any], now: datetime) -> Schedule:
    """The row `create` adds, planned (its first run), before any check that reads the database."""
    columns = timing_columns(data, now)
    if not any(columns.get(k) is not None for k in _KIND_COLUMNS):
        raise Invalid({"timing": ["give exactly one kind of timing: interval_seconds, every, cron, rrule, at "
                                  "or after_seconds"]})
    schedule = Schedule(**{k: data[k] for k in _PLAIN_COLUMNS if k in data}, **columns,
                        status=ScheduleStatus.ACTIVE.value, created_at=now, updated_at=now)
    _defaults(schedule)
    if schedule.anchor_at is None:
        schedule.anchor_at = planning.default_anchor(schedule, now)
    schedule.next_run_at = _first(schedule, now)
    return schedule


def create(data: dict[str, Any], now: datetime) -> Schedule:
    schedule = built(data, now)
    get_redis().ping()  # refuse before writing anything if the link could not be handed off
    # The transaction (SQLite: its write lock) starts here, held for the lookups, the insert and the commit.
    schedule.queue = _require_workflow(data["workflow_id"], schedule.owner_id).queue  # its links' queue
    require_calendar(schedule.calendar_id, schedule.owner_id)
    set_after(schedule, data, None)
    _require_free_key(schedule.owner_id, schedule.key, None)
    quotas.require_room(schedule.owner_id, "schedules", now)  # QuotaExceeded: the API and the console answer it
    db.session.add(schedule)
    flush_keyed(schedule.key)  # the id, for the event
    audit.record(schedule.id, schedule.owner_id, "create", now)
    transaction.commit()
    transaction.after_commit(lambda: hand_off_or_leave_to_recovery(schedule))
    return schedule


def update(schedule: Schedule | str, data: dict[str, Any], now: datetime) -> Schedule:
    _refuse_null_timing(data)
    schedule = _locked(schedule)
    moved = False
    if "workflow_id" in data:
        queue = _require_workflow(data["workflow_id"], schedule.owner_id).queue
        moved, schedule.queue = queue != schedule.queue, queue
    if data.get("key") is not None and data["key"] != schedule.key:
        _require_free_key(schedule.owner_id, data["key"], schedule.id)
    require_calendar(data.get("calendar_id"), schedule.owner_id)
    set_after(schedule, data, schedule.id)
    audit.record(schedule.id, schedule.owner_id, "update", now,
                 {key: audit.jsonable(value) for key, value in data.items()})
    columns = timing_columns(data, now)
    for key in _PLAIN_COLUMNS:
        if key in data:
            setattr(schedule, key, data[key])
    for key, value in columns.items():
        setattr(schedule, key, value)
    if "anchor_at" in columns and columns["anchor_at"] is None:
        schedule.anchor_at = planning.default_anchor(schedule, now)
    _defaults(schedule)
    if "total_repeats" in data and _repeats_used_up(schedule):
        return _finish_by_patch(schedule, now)
    replan = bool(columns) or "timeout_seconds" in data
    if replan:
        schedule.revision += 1
    if columns and schedule.status == ScheduleStatus.INVALID.value:
        schedule.status = ScheduleStatus.ACTIVE.value  # a timing that builds again (_first checks) revives it
    if replan and schedule.status == ScheduleStatus.ACTIVE.value and schedule.running_run_id is None:
        _start_new_tick(schedule)
    if columns and schedule.status == ScheduleStatus.ACTIVE.value:
        schedule.next_run_at = _first(schedule, now)
    else:
        _validate_spec(schedule)
    schedule.updated_at = now
    if replan and schedule.status == ScheduleStatus.ACTIVE.value:
        get_redis().ping()
    flush_keyed(schedule.key)
    transaction.commit()
    if replan or moved:  # moved to another queue: the same link, put again there (out of the old one)
        transaction.after_commit(lambda: hand_off_or_leave_to_recovery(schedule))
    return schedule


def _refuse_null_timing(data: dict[str, Any]) -> None:
    """A PATCH names the timing it switches to; null would mean "no timing", which no schedule can have."""
    nulls = [kind for kind in _KINDS if kind in data and data[kind] is None]
    if nulls:
        raise Invalid({kind: ["may not be null: to change the timing, give the new one (e.g. cron) alone"]
                       for kind in nulls})


def _repeats_used_up(schedule: Schedule) -> bool:
    """Whether a total_repeats just set leaves no run: at or below the runs already made (0 is no limit)."""
    live = schedule.status in (ScheduleStatus.ACTIVE.value, ScheduleStatus.PAUSED.value)
    return live and 0 < schedule.total_repeats <= schedule.run_count


def _finish_by_patch(schedule: Schedule, now: datetime) -> Schedule:
    """total_repeats lowered to the runs already made: done now, not after one run more. The revision bump
    fences the pending link, and withdrawing it keeps Redis tidy."""
    _validate_spec(schedule)
    schedule.status = ScheduleStatus.DONE.value
    schedule.next_run_at = None
    schedule.revision += 1
    schedule.updated_at = now
    transaction.commit()
    transaction.after_commit(lambda: withdraw(schedule))
    return schedule


def pause(schedule: Schedule | str, now: datetime, note: str | None = None) -> Schedule:
    """Pause, with an optional note saying why (shown as pause_note until the schedule is resumed)."""
    schedule = _locked(schedule)
    if schedule.status != ScheduleStatus.ACTIVE.value:
        raise Conflict(f"only an active schedule can be paused; this one is {schedule.status}")
    schedule.status = ScheduleStatus.PAUSED.value
    schedule.next_run_at = None
    schedule.pause_note, schedule.waiting_note = note, None  # nothing waits while it is paused
    schedule.paused_at = now
    schedule.revision += 1
    schedule.updated_at = now
    audit.record(schedule.id, schedule.owner_id, "pause", now, {"pause_note": note} if note else None)
    outbox.emit(db.session, schedule.owner_id, outbox.EventType.SCHEDULE_PAUSED.value, events.payload(
        outbox.EventType.SCHEDULE_PAUSED, schedule_id=schedule.id, schedule_name=schedule.name,
        status=schedule.status, from_="active", last_error=schedule.last_error, pause_note=note), now)
    transaction.commit()
    transaction.after_commit(lambda: withdraw(schedule))
    return schedule


def resume(schedule: Schedule | str, now: datetime) -> Schedule:
    """A paused schedule goes on; a dead one (its last tick's retries ran out) is revived. Either way it is
    planned from now, as after a pause: its next tick is the first after now, ticks that fell meanwhile are
    not run. Reviving keeps the counters and the last error and starts the retries over; the audit trail
    records it as `revive`, with who and the error it had died of."""
    schedule = _locked(schedule)
    if schedule.status not in (ScheduleStatus.PAUSED.value, ScheduleStatus.DEAD.value):
        raise Conflict(f"only a paused or dead schedule can be resumed; this one is {schedule.status}")
    revived = schedule.status == ScheduleStatus.DEAD.value
    if revived:
        schedule.current_retry = 0
    schedule.status = ScheduleStatus.ACTIVE.value
    schedule.pause_note = None
    schedule.paused_at = None
    schedule.revision += 1
    _start_new_tick(schedule)
    if schedule.interval_seconds and not schedule.anchor_explicit:
        schedule.anchor_at = planning.default_anchor(schedule, now)
    try:
        schedule.next_run_at = _first(schedule, now)
    except Invalid as exc:  # its timing is spent (or invalid): the schedule's state stands in the way
        raise Conflict("; ".join(m for ms in exc.errors.values() for m in ms) + "; edit its timing") from exc
    schedule.updated_at = now
    if revived:
        audit.record(schedule.id, schedule.owner_id, "revive", now, {"from": "dead", "last_error": schedule.last_error})
    else:
        audit.record(schedule.id, schedule.owner_id, "resume", now)
    get_redis().ping()
    schedule.health, schedule.late_since = "ok", None  # a new tick: the alert starts over
    schedule.detached_since = None
    transaction.commit()
    transaction.after_commit(lambda: hand_off_or_leave_to_recovery(schedule))
    return schedule


def remove(schedule_ids: list[str], now: datetime, along: Callable[[], None] | None = None) -> list[str]:
    """Delete schedules, their run history and their pending links; returns the IDs that existed. `along`
    makes the caller's own writes in the same transaction, after the deletes (a process that dies at any
    line leaves all of it or none)."""
    return remove_selected(select(Schedule).where(Schedule.id.in_(schedule_ids)), now, along)


def remove_selected(selected: Select[Schedule], now: datetime,
                    along: Callable[[], None] | None = None) -> list[str]:
    """remove, of the schedules `selected` reads (the API's DELETE: the caller's own, recur_server.auth.scope)."""
    schedules = db.session.scalars(selected).all()
    found = [s.id for s in schedules]
    for schedule in schedules:
        audit.record(schedule.id, schedule.owner_id, "delete", now)
    if found:
        db.session.execute(delete(Run).where(Run.schedule_id.in_(found)))
        db.session.execute(delete(Schedule).where(Schedule.id.in_(found)))
    if along is not None:
        along()
    transaction.commit()
    transaction.after_commit(lambda: withdraw_each(schedules))
    return found


def preview(data: dict[str, Any], now: datetime, count: int) -> tuple[timing.Spec, list[datetime]]:
    """What a timing body means, as if the schedule were created now: its spec and next nominal times."""
    require_calendar(data.get("calendar_id"), data.get("owner_id"))
    draft = Schedule(**timing_columns(data, now))
    _defaults(draft)
    if draft.anchor_at is None:
        draft.anchor_at = planning.default_anchor(draft, now)
    first = _first(draft, now)
    spec = planning.spec_of(draft)
    return spec, [first, *timing.preview(spec, first, count - 1)]


def _start_new_tick(schedule: Schedule) -> None:
    """A re-plan of an idle schedule (and every resume) puts its link under a new ID: the pending tick
    is abandoned, counted as consumed. A worker may have taken the old link and not claimed it yet (it
    will be fenced out), and RQ's finishing write to the old link's hash must not land on the new one.
    While a run is in flight, the run hands off its own successor under a new ID: nothing to do here."""
    schedule.current_repeat += 1
    schedule.current_retry = 0
    schedule.run_through = schedule.backlog = None  # a backlog decided under the old plan is dropped


def _first(schedule: Schedule, now: datetime) -> datetime:
    _validate_spec(schedule)
    first = planning.first_nominal(schedule, now)
    if first is None:
        raise Invalid({"timing": ["this timing has no run after now (check at, end_at, COUNT/UNTIL, windows)"]})
    return first


def _validate_spec(schedule: Schedule) -> None:
    _checked(lambda: planning.spec_of(schedule))


def _checked(build: Any) -> Any:
    try:
        return build()
    except timing.TimingError as exc:
        raise Invalid({exc.field: [exc.message]}) from exc


def _defaults(schedule: Schedule) -> None:
    for column, default in (
        ("total_repeats", 0), ("max_retries", 3), ("timeout_seconds", 600), ("timezone", "UTC"),
        ("day_or", True), ("jitter_seconds", 0), ("anchor_explicit", False), ("revision", 0),
        ("current_repeat", 0), ("current_retry", 0), ("run_count", 0), ("error_count", 0),
        ("on_exhausted", OnExhausted.DEAD.value), ("catch_up", CatchUpPolicy.LATEST.value), ("catch_up_limit", 100),
        ("overlap", OverlapPolicy.SKIP.value),
    ):
        if getattr(schedule, column) is None:
            setattr(schedule, column, default)


def _require_workflow(workflow_id: int, owner_id: int) -> Workflow:
    """A schedule uses a workflow of its own owner; another owner's workflow is, to it, no workflow."""
    workflow = db.session.get(Workflow, workflow_id)
    if workflow is None or workflow.owner_id != owner_id:
        raise Invalid({"workflow_id": [f"workflow {workflow_id} does not exist"]})
    return workflow


def set_after(schedule: Schedule, data: dict[str, Any], schedule_id: str | None) -> None:
    """The schedule's `after`, when the request gives it (null: it follows nothing any more)."""
    if "after" not in data:
        return
    try:
        columns = follow.after_columns(data["after"], schedule.owner_id, schedule_id)
    except follow.AfterRefused as exc:
        raise Invalid({"after": [str(exc)]}) from exc
    for column, value in columns.items():
        setattr(schedule, column, value)


def require_calendar(calendar_id: int | None, owner_id: int | None) -> None:
    """A schedule uses a calendar of its own owner; another owner's calendar is, to it, no calendar."""
    if calendar_id is None:
        return
    calendar = db.session.get(Calendar, calendar_id)
    if calendar is None or calendar.owner_id != owner_id:
        raise Invalid({"calendar_id": [f"calendar {calendar_id} does not exist"]})


def replan_for_calendar(schedule: Schedule, now: datetime, changes: dict[str, Any]) -> bool:
    """Re-plan a schedule whose calendar's days changed, as a timing PATCH does (in the caller's transaction,
    with an audit event "calendar_changed" carrying `changes`; the caller hands off after the commit): True
    when it was re-planned. One whose timing has no run after now any more keeps its plan (False)."""
    if schedule.status != ScheduleStatus.ACTIVE.value:
        return False
    first = planning.first_nominal(schedule, now)
    if first is None:
        return False
    audit.record(schedule.id, schedule.owner_id, "calendar_changed", now, changes)
    schedule.revision += 1
    if schedule.running_run_id is None:
        _start_new_tick(schedule)
    schedule.next_run_at = first
    schedule.updated_at = now
    return True


def _require_free_key(owner_id: int, key: str | None, other_than: str | None) -> None:
    if key is None:
        return
    taken = db.session.scalar(select(Schedule.id).where(
        (Schedule.owner_id == owner_id) & (Schedule.key == key) & (Schedule.id != (other_than or ""))))
    if taken is not None:
        raise DuplicateKey(key)


def flush_keyed(key: str | None, keyed: bool = False) -> None:
    """Flush; a key a concurrent request took meanwhile is the unique constraint's refusal, a 409 too."""
    try:
        db.session.flush()
    except IntegrityError as exc:
        refusal = str(exc.orig)
        if not (key or keyed) or not ("uq_scheduled_jobs_owner_key" in refusal or "scheduled_jobs.key" in refusal):
            raise
        raise DuplicateKey(key) from exc


def _locked(schedule: Schedule | str) -> Schedule:
    """The row to change: as the caller read it FOR UPDATE in this transaction, or read so by its id."""
    found = schedule if isinstance(schedule, Schedule) else db.session.get(
        Schedule, schedule, with_for_update=True, populate_existing=True)
    if found is None:
        raise LookupError(schedule)
    return found

"""The `data` of every event type, declared once: each field's name, type, whether it can be null and what it
means. payload() builds an event's data from every field its type declares (instants written as recur_server.timing.iso
writes them, seconds to the millisecond), and recur_server.notify.outbox.emit checks the data of every event against its
type's schema (check(): cheap, since most events are not written: no webhook wants them; the schema's own
validation too for an event written). So a field is named and shaped here only, and an event that does not match
its schema raises InvalidEvent, in tests and in production alike (a bug in the code that built it).
docs/notifications.md's table of the fields is rendered from these schemas (tests/test_event_payloads.py compares
the two).

Keyed by the event types' values: recur_server.notify.outbox, which declares EventType, imports this module (not the
other way round), and a test checks that every type has its schema."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from marshmallow import Schema, fields, validate

from recur_server.models import RunStatus, RunTrigger, ScheduleStatus
from recur_server.policies import breaker
from recur_server.policies.run_alerts import TICK_TRIGGERS
from recur_server.timing import iso


class InvalidEvent(ValueError):
    """An event's data is not what its type declares (a bug in the code that built it), or its type is unknown."""


class Instant(fields.DateTime):
    """An instant, as Recur writes it everywhere: UTC ISO 8601 with a Z (recur_server.timing.iso; payload()
    writes it)."""


class Seconds(fields.Float):
    """A duration in seconds, to the millisecond (payload() rounds it)."""


def _field(kind: type[fields.Field[Any]], meaning: str, null: bool = False, one_of: Iterable[str] | None = None,
           **options: Any) -> Any:
    """A field every payload carries (null only where `null`), with its one-line meaning."""
    if one_of is not None:
        options["validate"] = validate.OneOf(list(one_of))
    if kind is fields.Integer:
        options["strict"] = True
    return kind(required=True, allow_none=null, metadata={"description": meaning}, **options)


_RUN_STATUSES = [RunStatus.SUCCEEDED.value, RunStatus.FAILED.value, RunStatus.TIMED_OUT.value]
_FAILED_STATUSES = [RunStatus.FAILED.value, RunStatus.TIMED_OUT.value]
_TRIGGERS = [trigger.value for trigger in RunTrigger]
_TICK_TRIGGERS = [trigger for trigger in _TRIGGERS if trigger in TICK_TRIGGERS]
_SCHEDULE_STATUSES = [status.value for status in ScheduleStatus]
_BREAKER_STATES = [breaker.CLOSED, breaker.OPEN, breaker.HALF_OPEN]


class _OfSchedule(Schema):
    schedule_id = _field(fields.String, "the schedule's id")
    schedule_name = _field(fields.String, "the schedule's name")


class _OfRun(_OfSchedule):
    run_id = _field(fields.String, "the run's id")
    scheduled_for = _field(Instant, "the run's nominal time: its tick, or when it was asked for")


class RunFinished(_OfRun):
    workflow_id = _field(fields.Integer, "the schedule's workflow")
    finished_at = _field(Instant, "when the run ended")
    status = _field(fields.String, "how it ended (the event's type says the same)", one_of=_RUN_STATUSES)
    trigger = _field(fields.String, "why the run happened", one_of=_TRIGGERS)
    error = _field(fields.String, "what went wrong; null for a success", null=True)
    triggered_by_run_id = _field(fields.String, "for trigger `after`: the upstream run whose end triggered it",
                                 null=True)


class RunLate(_OfRun):
    started_at = _field(Instant, "when the run started")
    late_seconds = _field(Seconds, "started_at - scheduled_for, in seconds")
    late_after_seconds = _field(fields.Integer, "the schedule's late_after_seconds when the run started")
    trigger = _field(fields.String, "why the run happened: a tick of the timing", one_of=_TICK_TRIGGERS)


class RunLong(_OfRun):
    started_at = _field(Instant, "when the run started")
    running_seconds = _field(Seconds, "how long it had been going when the alert was raised")
    long_after_seconds = _field(fields.Integer, "the schedule's long_after_seconds")
    trigger = _field(fields.String, "why the run happened", one_of=_TRIGGERS)


class StatusChanged(_OfSchedule):
    status = _field(fields.String, "the schedule's status now (the event's type says the same)",
                    one_of=_SCHEDULE_STATUSES)
    from_ = _field(fields.String, "its status before", one_of=_SCHEDULE_STATUSES, data_key="from")
    last_error = _field(fields.String, "the schedule's last error (of its last run); null when none", null=True)
    pause_note = _field(fields.String, "why it was paused, as the caller or on_exhausted: pause said; null when "
                        "no note", null=True)


class Missed(_OfSchedule):
    expected_at = _field(Instant, "the tick that has not succeeded in time; null when it has none planned",
                         null=True)
    alert_after_seconds = _field(fields.Integer, "the schedule's alert_after_seconds")
    status = _field(fields.String, "the schedule's status", one_of=_SCHEDULE_STATUSES)


class Recovered(_OfRun):
    late_since = _field(Instant, "when the missed-run alert this success ends was raised; null when none was",
                        null=True)
    failing_since = _field(Instant, "when the failure streak this success ends began; null when none was raised",
                           null=True)
    failures = _field(fields.Integer, "the length of that failure streak; null when none was raised", null=True)


class Failing(_OfRun):
    failures = _field(fields.Integer, "failed or timed-out runs in a row, this one (run_id) the last")
    failing_after = _field(fields.Integer, "the schedule's failing_after")
    status = _field(fields.String, "how this run ended", one_of=_FAILED_STATUSES)


class BreakerChanged(Schema):
    workflow_id = _field(fields.Integer, "the workflow's id")
    workflow_name = _field(fields.String, "the workflow's name")
    from_ = _field(fields.String, "the breaker's state before", one_of=_BREAKER_STATES, data_key="from")
    to = _field(fields.String, "its state now (the event's type says the same)", one_of=_BREAKER_STATES)
    reason = _field(fields.String, "why it changed, in words")
    failures = _field(fields.Integer, "consecutive failed runs counted now (0 once closed)")


class WorkersGone(Schema):
    queue = _field(fields.String, "the queue left with active schedules and no live worker")
    live_workers = _field(fields.Integer, "live worker processes on it (0)")
    grace_seconds = _field(Seconds, "RECUR_WORKER_GRACE_SECONDS: a worker without a beat for this long is gone")
    last_seen_at = _field(Instant, "the last beat of a worker on the queue; null when none was seen", null=True)


class WorkersBack(Schema):
    queue = _field(fields.String, "the queue served again")
    live_workers = _field(fields.Integer, "live worker processes on it now")
    gone_since = _field(Instant, "when the queue was found without a live worker")


# Each type's schema; types that share one are listed together, in the docs' order.
GROUPS: list[tuple[tuple[str, ...], Schema]] = [
    (("run.failed", "run.timed_out", "run.succeeded"), RunFinished()),
    (("run.late",), RunLate()),
    (("run.long",), RunLong()),
    (("schedule.dead", "schedule.paused", "schedule.done"), StatusChanged()),
    (("schedule.missed",), Missed()),
    (("schedule.recovered",), Recovered()),
    (("schedule.failing",), Failing()),
    (("breaker.opened", "breaker.closed"), BreakerChanged()),
    (("workers.gone",), WorkersGone()),
    (("workers.back",), WorkersBack()),
]
SCHEMAS: dict[str, Schema] = {event_type: schema for types, schema in GROUPS for event_type in types}


def _instant(value: datetime) -> str:
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise InvalidEvent(f"an instant must be an aware datetime, not {value!r}")
    return iso(value)


def _seconds(value: float) -> float:
    return round(float(value), 3)


def _is_instant(value: Any) -> bool:
    """Written as recur_server.timing.iso writes an instant."""
    if not isinstance(value, str) or not value.endswith("Z"):
        return False
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


# Per kind of field: how payload() shapes a value, and what the value in `data` must be.
_SHAPES: dict[type[Any], Callable[[Any], Any]] = {Instant: _instant, Seconds: _seconds}
_KINDS: dict[type[Any], Callable[[Any], bool]] = {
    Instant: _is_instant, Seconds: lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    fields.Integer: lambda v: isinstance(v, int) and not isinstance(v, bool),
    fields.String: lambda v: isinstance(v, str),
}


@dataclass(frozen=True)
class _Rule:
    """One field as payload() and check() read it (made once per type from its schema)."""

    attribute: str  # the name payload() takes (`from_` for `from`)
    key: str  # the name in `data`
    shape: Callable[[Any], Any] | None
    kind: Callable[[Any], bool]
    null: bool
    choices: frozenset[str] | None


def _rules(schema: Schema) -> list[_Rule]:
    rules = []
    for name, field in schema.fields.items():
        choices = field.validate.choices if isinstance(field.validate, validate.OneOf) else None
        rules.append(_Rule(field.attribute or name, field.data_key or name, _SHAPES.get(type(field)),
                           _KINDS[type(field)], field.allow_none, frozenset(choices) if choices is not None else None))
    return rules


_RULES = {event_type: _rules(schema) for event_type, schema in SCHEMAS.items()}
_KEYS = {event_type: frozenset(rule.key for rule in rules) for event_type, rules in _RULES.items()}


def _rules_of(event_type: str) -> list[_Rule]:
    rules = _RULES.get(event_type)
    if rules is None:
        raise InvalidEvent(f"{event_type!r} is not an event type with a schema (recur_server.notify.events)")
    return rules


def payload(event_type: str, **given: Any) -> dict[str, Any]:
    """The `data` of an event of this type, from every field its schema declares, by attribute name (`from_` for
    `from`; None where it may be null): instants as aware datetimes (written as recur_server.timing.iso writes them),
    seconds as numbers (to the millisecond). Raises InvalidEvent for a field missing or unknown."""
    rules = _rules_of(event_type)
    if len(given) != len(rules) or any(rule.attribute not in given for rule in rules):
        names = {rule.attribute for rule in rules}
        missing, unknown = sorted(names - given.keys()), sorted(given.keys() - names)
        raise InvalidEvent(f"{event_type}: fields missing {missing}, unknown {unknown}")
    data = {}
    for rule in rules:
        value = given[rule.attribute]
        data[rule.key] = value if value is None or rule.shape is None else rule.shape(value)
    return data


def check(event_type: str, data: dict[str, Any]) -> None:
    """Raise InvalidEvent unless `data` is what the type's schema declares: every field, each of its type (an
    instant as recur_server.timing.iso writes it), null only where it may be, one of its choices where it has some, and
    no other. Cheap, for every event emitted, written or not (most are not: no webhook wants them)."""
    rules = _rules_of(event_type)
    if data.keys() != _KEYS[event_type]:
        missing, unknown = sorted(_KEYS[event_type] - data.keys()), sorted(data.keys() - _KEYS[event_type])
        raise InvalidEvent(f"{event_type}: fields missing {missing}, unknown {unknown}")
    for rule in rules:
        value = data[rule.key]
        if value is None:
            if not rule.null:
                raise InvalidEvent(f"{event_type}: {rule.key} may not be null")
        elif not rule.kind(value) or (rule.choices is not None and value not in rule.choices):
            raise InvalidEvent(f"{event_type}: {rule.key} may not be {value!r}")


def validate_written(event_type: str, data: dict[str, Any]) -> None:
    """The schema's own validation of an event about to be written (dearer than check(), so only then)."""
    errors = SCHEMAS[event_type].validate(data)
    if errors:
        raise InvalidEvent(f"{event_type}'s data does not match its schema (recur_server.notify.events): {errors}")

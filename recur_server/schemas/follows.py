"""A schedule's `after`: the schedule whose runs' ends trigger it (recur_server.services.follow, docs/follows.md)."""

from __future__ import annotations

from typing import Any

from marshmallow import RAISE, Schema, ValidationError, fields, validate

from recur_server import timing
from recur_server.models import Schedule
from recur_server.policies.follow import FollowOn
from recur_server.schemas.fields import whole
from recur_server.timing.window import parse_window

MAX_DELAY_SECONDS = 7 * 86400
_ON = [on.value for on in FollowOn]


def _window(text: str) -> None:
    try:
        parse_window(text)
    except timing.TimingError as exc:
        raise ValidationError(str(exc).replace("only_between", "within")) from exc


class AfterIn(Schema):
    """Which of the owner's schedules this one follows, on which of its runs' ends, how long after, and only
    when that time falls in a window (only_between's form, in this schedule's timezone)."""

    class Meta:
        unknown = RAISE

    schedule = fields.String(required=True, validate=validate.Length(min=1, max=200), metadata={
        "example": "nightly-export", "description": "the upstream schedule's id or key (one of yours)"})
    on = fields.String(load_default=FollowOn.SUCCEEDED.value, validate=validate.OneOf(_ON), metadata={
        "description": "succeeded (default), failed (failed or timed out), or ended (either)"})
    delay_seconds = whole(0, MAX_DELAY_SECONDS, load_default=0, metadata={
        "description": "seconds after the upstream run ended that the triggered run is due"})
    within = fields.String(allow_none=True, load_default=None, validate=[validate.Length(max=32), _window],
                           metadata={"example": "06:00-22:00", "description":
                                     "a trigger due outside this local window is recorded skipped"})


AFTER_DOC: dict[str, Any] = {
    "type": "object", "nullable": True,
    "description": "The schedule whose runs' ends trigger this one (null: none).",
    "properties": {"schedule_id": {"type": "string"}, "on": {"type": "string", "enum": _ON},
                   "delay_seconds": {"type": "integer"}, "within": {"type": "string", "nullable": True}},
    "required": ["schedule_id", "on", "delay_seconds", "within"],
}


def after_of(schedule: Schedule) -> dict[str, Any] | None:
    if schedule.after_schedule_id is None:
        return None
    return {"schedule_id": schedule.after_schedule_id, "on": schedule.after_on or FollowOn.SUCCEEDED.value,
            "delay_seconds": schedule.after_delay_seconds or 0, "within": schedule.after_within}

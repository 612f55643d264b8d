"""A schedule's `after`: which schedule's runs it follows, checked when it is set. The upstream is one of the
follower's own owner's schedules, named by id or key (another owner's is, to it, no schedule); a chain of
followers never comes back to where it started; an upstream has at most MAX_FOLLOWERS followers.

The chain's part (the triggers a finish writes) is recur_server.chain.follow; the dispatcher's
recur_server.services.outside_runs.follow.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from recur_server.auth.models import Owner
from recur_server.auth.scope import scoped
from recur_server.chain.follow import MAX_FOLLOWERS
from recur_server.infra.extensions import db
from recur_server.models import Schedule
from recur_server.policies.follow import FollowOn

# How many links `after` may chain (A after B after C ...): the cycle check reads one row per link.
MAX_DEPTH = 32
COLUMNS = ("after_schedule_id", "after_on", "after_delay_seconds", "after_within")


class AfterRefused(Exception):
    """The follow rules refuse a schedule's `after`: it names no schedule of the owner, closes a cycle, or makes
    one follower too many (recur_server.services.schedules answers it as Invalid on the field "after", a 422)."""


def after_columns(after: dict[str, Any] | None, owner_id: int, schedule_id: str | None) -> dict[str, Any]:
    """The columns of a schedule's `after` (all None: it follows nothing). `schedule_id`: the follower (None
    while it is being created, when nothing can follow it yet and so no cycle can pass through it)."""
    if after is None:
        return dict.fromkeys(COLUMNS)
    if not after.get("schedule"):  # a PATCH loads `after` partially too: the upstream is still required
        raise AfterRefused("schedule: give the upstream schedule's id or key")
    upstream = _upstream(after["schedule"], owner_id)
    if schedule_id is not None:
        _lock_owner(owner_id)  # two edits that would close a cycle between them take turns
        _refuse_cycle(upstream.id, schedule_id, owner_id)
    followers = db.session.scalar(select(func.count()).select_from(Schedule).where(
        (Schedule.after_schedule_id == upstream.id) & (Schedule.owner_id == owner_id)
        & (Schedule.id != (schedule_id or ""))))
    if (followers or 0) >= MAX_FOLLOWERS:
        raise AfterRefused(f"schedule {after['schedule']!r} has {MAX_FOLLOWERS} followers already, the most it may "
                           "have")
    return {"after_schedule_id": upstream.id, "after_on": after.get("on") or FollowOn.SUCCEEDED.value,
            "after_delay_seconds": after.get("delay_seconds") or 0, "after_within": after.get("within")}


def _upstream(ref: str, owner_id: int) -> Schedule:
    """The owner's schedule with this id, else with this key; the same refusal whether none has it or another
    owner's does."""
    for column in (Schedule.id, Schedule.key):
        upstream = db.session.scalars(select(Schedule).where(
            (Schedule.owner_id == owner_id) & (column == ref))).first()
        if upstream is not None:
            return upstream
    raise AfterRefused(f"no schedule with id or key {ref!r}")


def _lock_owner(owner_id: int) -> None:
    db.session.execute(select(Owner.id).where(Owner.id == owner_id).with_for_update())


def _refuse_cycle(upstream_id: str, follower_id: str, owner_id: int) -> None:
    """Walk `after` up from the new upstream: meeting the follower again would close a cycle."""
    current: str | None = upstream_id
    for _ in range(MAX_DEPTH):
        if current is None:
            return
        if current == follower_id:
            raise AfterRefused("this would make a cycle: the schedule would follow itself, through its upstream chain")
        current = db.session.scalar(select(Schedule.after_schedule_id).where(
            (Schedule.id == current) & (Schedule.owner_id == owner_id)))
    raise AfterRefused(f"the upstream chain is longer than {MAX_DEPTH} schedules")


def neighbours(schedule: Schedule) -> tuple[Schedule | None, list[Schedule]]:
    """The schedule it follows and the schedules that follow it (at most MAX_FOLLOWERS), as the caller may
    see them (recur_server.auth.scope), for its page."""
    upstream = None
    if schedule.after_schedule_id is not None:
        upstream = db.session.scalars(scoped(select(Schedule), Schedule)
                                      .where(Schedule.id == schedule.after_schedule_id)).first()
    followers = db.session.scalars(scoped(select(Schedule), Schedule)
                                   .where(Schedule.after_schedule_id == schedule.id)
                                   .order_by(Schedule.name, Schedule.id).limit(MAX_FOLLOWERS))
    return upstream, list(followers)

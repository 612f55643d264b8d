"""Bulk actions on the schedules list: the rows ticked in one form (plain checkboxes, no JavaScript needed) are
paused, resumed or, after a page that lists them, deleted, each through recur_server.services.schedules as one at a
time would
be. The ids are checked by the API's BatchDeleteIn (at most 1,000); another owner's id is as absent as one
that never was."""

from __future__ import annotations

from typing import Any

from flask import flash, redirect, render_template, request, url_for
from redis.exceptions import RedisError
from sqlalchemy import select

from recur_server.auth.scope import scoped
from recur_server.console import forms, session
from recur_server.console.views import Page, console
from recur_server.infra import clock
from recur_server.infra.extensions import db
from recur_server.models import Schedule
from recur_server.schemas.schedules import BatchDeleteIn
from recur_server.services import queries, schedules

ACTIONS = {"pause": ("Paused", schedules.pause), "resume": ("Resumed", schedules.resume)}
_IDS = BatchDeleteIn()


def chosen() -> tuple[list[Schedule], str | None]:
    """The caller's schedules among the ticked ids (in the list's order), or why none can be acted on."""
    ids = request.form.getlist("schedule_id")
    if not ids:
        return [], "Tick the schedules to act on first."
    data, errors = forms.loaded(_IDS, {"schedule_ids": ids})
    if errors:
        return [], "; ".join(m for ms in errors.values() for m in ms)
    shaped = [i for i in data["schedule_ids"] if queries.is_schedule_id(i)]
    found = db.session.scalars(scoped(select(Schedule), Schedule).where(Schedule.id.in_(shaped))
                               .order_by(Schedule.created_at.desc(), Schedule.id.desc())).all()
    return list(found), None if found else "None of those schedules exists."


def back() -> str:
    """The list the form came from, with its filters."""
    filters: dict[str, Any] = {k: request.form[k] for k in ("status", "workflow", "q") if request.form.get(k)}
    return url_for("console.schedule_list", **filters)


@console.post("/schedules/bulk")
@session.signed_in
def schedule_bulk() -> Page:
    found, problem = chosen()
    if problem:
        flash(problem)
        return redirect(back())
    action = request.form.get("action", "")
    if action == "delete":
        return delete(found)
    if action not in ACTIONS:
        flash("Choose pause, resume or delete.")
        return redirect(back())
    done_word, call = ACTIONS[action]
    done: list[str] = []
    refused: list[str] = []
    now = clock.utcnow()
    note = (request.form.get("note") or "").strip() or None
    for schedule in found:
        try:
            call(schedule.id, now, *([note] if action == "pause" else []))
            done.append(schedule.name)
        except (schedules.Conflict, schedules.Invalid, RedisError) as exc:
            db.session.rollback()
            refused.append(f"{schedule.name}: {_reason(exc)}")
    message = f"{done_word} {len(done)} schedule{'' if len(done) == 1 else 's'}."
    if refused:
        message += f" Left {len(refused)} as they were ({'; '.join(refused)})."
    flash(message)
    return redirect(back())


def _reason(exc: Exception) -> str:
    if isinstance(exc, RedisError):
        return "Redis is unreachable"
    if isinstance(exc, schedules.Invalid):
        return "; ".join(m for ms in exc.errors.values() for m in ms)
    return str(exc)


def delete(found: list[Schedule]) -> Page:
    """First a page listing what would go; confirmed, the schedules, their runs and pending links."""
    if not request.form.get("confirm"):
        hidden = [("action", "delete"), ("confirm", "1"), *(("schedule_id", s.id) for s in found),
                  *((k, request.form[k]) for k in ("status", "workflow", "q") if request.form.get(k))]
        return render_template("confirm.html", title=f"Delete {len(found)} schedule{'' if len(found) == 1 else 's'}?",
                               text="These schedules go, with their run history and pending runs. It cannot be undone.",
                               items=[s.name for s in found], hidden=hidden, button="Delete them",
                               back=back())
    deleted = schedules.remove([s.id for s in found], clock.utcnow())
    flash(f"Deleted {len(deleted)} schedule{'' if len(deleted) == 1 else 's'}.")
    return redirect(back())

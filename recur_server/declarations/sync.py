"""One sync: the declarations checked, the lock taken, the plan made, carried out and reported. The command
(`flask declarations sync`) and a worker's start (RECUR_SYNC_ON_START=1) both come here."""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field
from datetime import datetime

from flask import Flask, current_app
from sqlalchemy import select

from recur_server.auth.models import Owner
from recur_server.declarations.execute import current_state, execute, missing_upstreams, owner_calendars
from recur_server.declarations.lock import SyncLock
from recur_server.declarations.plan import (
    CONFLICT,
    CREATE,
    DELETE,
    PAUSE,
    RESUME,
    UNCHANGED,
    UPDATE,
    Plan,
    Step,
    Wanted,
    plan_declarations,
    upstreams,
)
from recur_server.declarations.wanted import wanted
from recur_server.infra import clock
from recur_server.infra.extensions import db, get_redis
from recur_server.infra.in_lists import in_batches
from recur_server.models import Schedule
from recur_server.services import known_tasks
from recur_server.tasks.declarations import DeclarationError, settle

log = logging.getLogger("recur.sync")
LOCK_WAIT_SECONDS = 60.0
ACTIONS = (CREATE, UPDATE, RESUME, PAUSE, DELETE, UNCHANGED, CONFLICT)


class SyncError(Exception):
    """The sync cannot run: no owner to sync as, or another process holds the lock too long."""


@dataclass
class Outcome:
    plan: Plan | None  # None: nothing was planned (another process synced the same declarations)
    dry_run: bool
    skipped: str = ""  # why nothing was planned
    warnings: list[str] = field(default_factory=list)  # "KEY: ...": what it synced (services.known_tasks)

    def lines(self) -> list[str]:
        if self.plan is None:
            return [f"declarations sync: {self.skipped}"]
        lines = [_line(step) for step in self.plan.steps]
        counts = ", ".join(f"{self.plan.count(action)} {action}" for action in ACTIONS if self.plan.count(action))
        lines.append(("plan: " if self.dry_run else "synced: ") + (counts or "no declarations")
                     + (" (dry run: nothing was changed)" if self.dry_run else ""))
        return lines + [f"warning: {warning}" for warning in self.warnings]

    def as_dict(self) -> dict[str, object]:
        return {"dry_run": self.dry_run, "skipped": self.skipped or None,
                "steps": [step.as_dict() for step in self.plan.steps] if self.plan else [],
                "summary": {action: self.plan.count(action) for action in ACTIONS} if self.plan else {},
                "warnings": self.warnings}


def sync(app: Flask, dry_run: bool = False, prune: bool = False, once: bool = False) -> Outcome:
    """Bring the database in line with the declarations. `once` (a worker's start): skip when another process
    synced these same declarations in the last minutes, so that workers starting together sync once.
    Raises DeclarationError for a declaration the API would refuse, SyncError when it cannot run."""
    with app.app_context():
        try:
            now = clock.utcnow()
            declarations = wanted(settle(), now)
            if dry_run:  # every step carried out, with the real sync's checks, and rolled back
                owner = sync_owner()
                plan = _plan(owner, declarations, prune)
                execute(plan, owner, now, dry_run=True)
                return Outcome(plan, dry_run=True)
            # The lock before the first read: a process waiting for it must hold no transaction, which on
            # SQLite (BEGIN IMMEDIATE) is the write lock the holder needs to sync.
            lock = SyncLock(get_redis())
            if not lock.acquire(LOCK_WAIT_SECONDS):
                raise SyncError(f"another process has held the sync lock for {LOCK_WAIT_SECONDS:g} s")
            try:
                owner = sync_owner()
                digest = hashlib.sha256(json.dumps(
                    [owner.id, prune, [[w.key, w.schedule, w.workflow] for w in declarations]],
                    sort_keys=True, default=str).encode()).hexdigest()
                if once and lock.synced_already(digest):
                    return Outcome(None, False, "another process synced these declarations already")
                plan = _plan(owner, declarations, prune)
                execute(plan, owner, now, lock.renew)
                lock.mark_synced(digest)
                return Outcome(plan, dry_run=False, warnings=_task_warnings(plan, now))
            finally:
                lock.release()
        finally:
            db.session.remove()


def _task_warnings(plan: Plan, now: datetime) -> list[str]:
    """Of the schedules the sync made or changed, what their queue's live workers say of their tasks (a warning,
    not a refusal: the workers with a new module may be restarted after the sync)."""
    keys = {step.target: step.name for step in plan.steps
            if step.action in (CREATE, UPDATE, RESUME) and step.target is not None}
    ids = list(keys)  # in the plan's order, which the warnings keep
    found = {row.id: row for batch in in_batches(ids)
             for row in db.session.scalars(select(Schedule).where(Schedule.id.in_(batch)))}
    rows = [found[ident] for ident in ids if ident in found]
    said = known_tasks.Warnings(now).of_each(rows)
    lines = [f"{keys[row.id]}: {warning}" for row, warnings in zip(rows, said, strict=True) for warning in warnings]
    db.session.rollback()
    return lines


def sync_owner() -> Owner:
    """The owner declared schedules belong to and the audit trail names: RECUR_SYNC_OWNER, else the first
    admin."""
    name = current_app.config["RECUR_SYNC_OWNER"]
    if name:
        owner: Owner | None = db.session.scalar(select(Owner).where(Owner.name == name))
        if owner is None:
            raise SyncError(f"RECUR_SYNC_OWNER names {name!r}, and no owner has that name")
        return owner
    admin: Owner | None = db.session.scalar(select(Owner).where(Owner.is_admin.is_(True)).order_by(Owner.id).limit(1))
    if admin is None:
        raise SyncError("no admin to sync as: create one (flask owners create NAME --admin) or set "
                        "RECUR_SYNC_OWNER")
    return admin


def _plan(owner: Owner, declarations: list[Wanted], prune: bool) -> Plan:
    _refuse_unknown_upstreams(owner, declarations)
    _find_calendars(owner, declarations)
    current = current_state(owner.id, [w.key for w in declarations])
    plan = plan_declarations(declarations, current, prune)
    db.session.rollback()  # end the read: the steps take their own locks
    return plan


def _find_calendars(owner: Owner, declarations: list[Wanted]) -> None:
    """Each declaration's calendar, named (`calendar=`) or by id (`calendar_id=`), as the id of one of the
    owner's calendars; one the owner does not have is refused before anything is done."""
    if not any(w.schedule.get("calendar") is not None or w.schedule.get("calendar_id") is not None
               for w in declarations):
        return
    by_name = owner_calendars(owner.id)
    known_ids = set(by_name.values())
    for want in declarations:
        name = want.schedule.pop("calendar", None)
        if name is not None:
            if name not in by_name:
                raise DeclarationError(want.key, {"calendar": [f"no calendar named {name!r} (the sync's owner, "
                                                               f"{owner.name}, has none by that name)"]}, want.where)
            want.schedule["calendar_id"] = by_name[name]
        elif want.schedule.get("calendar_id") is not None and want.schedule["calendar_id"] not in known_ids:
            raise DeclarationError(want.key, {"calendar_id": [
                f"calendar {want.schedule['calendar_id']} does not exist"]}, want.where)


def _refuse_unknown_upstreams(owner: Owner, declarations: list[Wanted]) -> None:
    """A declaration that follows a schedule neither declared nor the owner's: refused before anything is
    done (the API would refuse it half-way through the sync)."""
    follows = upstreams(declarations)
    elsewhere = {ref for ref in follows.values() if ref is not None and ref not in follows}
    missing = missing_upstreams(owner.id, elsewhere) if elsewhere else set()
    for want in declarations:
        if follows[want.key] in missing:
            raise DeclarationError(want.key, {"follows": [
                f"no schedule with id or key {follows[want.key]!r}: declare it, or create it first"]}, want.where)


def _line(step: Step) -> str:
    head = f"{step.action:9} {step.name}"
    if step.changes:
        head += "  (" + "; ".join(f"{name}: {_text(old)} -> {_text(new)}"
                                  for name, (old, new) in step.changes.items()) + ")"
    if step.note:
        head += f"  [{step.note}]"
    return head


def _text(value: object) -> str:
    return json.dumps(value, default=str) if not isinstance(value, str) else value

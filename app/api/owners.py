"""Who is calling, their tokens, and (for admins) the owners: /me/, /tokens/, /owners/, and a schedule's
audit trail (/schedules/{id}/events/)."""

from __future__ import annotations

from datetime import datetime

from flask import Response, jsonify
from sqlalchemy import delete, func, select

from app import clock
from app.api.contract import documented
from app.api.errors import ApiError, error_body, not_found
from app.api.schemas import (
    INT_MAX,
    EventPage,
    OwnerCreatedOut,
    OwnerEventOut,
    OwnerEventPage,
    OwnerIn,
    OwnerOut,
    OwnerPage,
    OwnerPatchIn,
    PageIn,
    TokenIn,
    TokenOut,
    TokenPage,
    dump,
    event_out,
    owner_out,
    token_out,
)
from app.api.views import _body, _created, _known_shape, _query, _schema, api
from app.auth import quotas
from app.auth.models import ApiToken, Owner, OwnerEvent, ScheduleEvent
from app.auth.scope import caller, get_owned, scoped
from app.auth.tokens import issue
from app.extensions import db
from app.models import ScheduledJob, Workflow
from app.notify import outbox


def _admin_only() -> Owner:
    owner = caller()
    if not owner.is_admin:
        raise ApiError(403, "forbidden", "Only an admin may manage owners.")
    return owner


@api.get("/me/")
@documented(summary="The calling owner", answer=OwnerOut)
def me() -> Response:
    return jsonify(owner_out(caller()))


@api.get("/tokens/")
@documented(summary="The caller's API tokens (never their secrets)", answer=TokenPage, query=PageIn)
def list_tokens() -> Response:
    page = _query(_schema(PageIn))
    mine = select(ApiToken).where(ApiToken.owner_id == caller().id)
    total = db.session.scalar(select(func.count()).select_from(mine.subquery()))
    rows = db.session.scalars(mine.order_by(ApiToken.id).limit(page["limit"]).offset(page["offset"]))
    return jsonify({"items": [token_out(t) for t in rows], "total": total})


@api.post("/tokens/")
@documented(summary="Create an API token (its secret is shown once)", ok=201, answer=TokenOut, body=TokenIn)
def create_token() -> tuple[Response, int]:
    data = _body(_schema(TokenIn))
    now = clock.utcnow()
    if data.get("expires_at") is not None and data["expires_at"] <= now:
        raise ApiError(422, "validation_error", "The request body is invalid.",
                       {"expires_at": ["must be in the future"]})
    quotas.require_room(caller().id, "tokens", now)
    issued = issue(caller(), data["name"], now, data.get("expires_at"))
    db.session.commit()
    return _created(token_out(issued.token, issued.secret))


@api.delete("/tokens/<int:token_id>/")
@documented(summary="Revoke one of the caller's tokens", ok=204, errors=[404])
def revoke_token(token_id: int) -> tuple[str, int]:
    token = db.session.get(ApiToken, token_id) if token_id <= INT_MAX else None
    if token is None or token.owner_id != caller().id:
        raise not_found("token", token_id)
    if token.revoked_at is None:
        token.revoked_at = clock.utcnow()
        db.session.commit()
    return "", 204


@api.get("/owners/")
@documented(summary="List owners (admin)", answer=OwnerPage, query=PageIn, errors=[403])
def list_owners() -> Response:
    _admin_only()
    page = _query(_schema(PageIn))
    total = db.session.scalar(select(func.count()).select_from(Owner))
    rows = db.session.scalars(select(Owner).order_by(Owner.id).limit(page["limit"]).offset(page["offset"]))
    return jsonify({"items": [owner_out(o) for o in rows], "total": total})


@api.patch("/owners/<int:owner_id>/")
@documented(summary="Set one owner's quotas (admin)", answer=OwnerOut, body=OwnerPatchIn, errors=[403, 404])
def update_owner(owner_id: int) -> Response:
    """`{"quotas": {"schedules": 50000}}` gives this owner a limit of its own; null goes back to the
    RECUR_MAX_*_PER_OWNER default. Quotas not named are left as they are. Lowering one below what the
    owner holds removes nothing: it refuses further creates until the owner is under it again."""
    _admin_only()
    data = _body(_schema(OwnerPatchIn))
    owner = db.session.get(Owner, owner_id, with_for_update=True) if owner_id <= INT_MAX else None
    if owner is None:
        raise not_found("owner", owner_id)
    for quota, value in data["quotas"].items():
        setattr(owner, quotas.COLUMNS[quota], value)
    _record(owner, "owner.quotas_changed", clock.utcnow(), {"quotas": data["quotas"]})
    db.session.commit()
    return jsonify(owner_out(owner))


@api.errorhandler(quotas.QuotaExceeded)
def _over_quota(exc: quotas.QuotaExceeded) -> Response:
    """Every create the API makes (schedules, webhooks, tokens) refuses the same way: 422 naming the quota."""
    db.session.rollback()
    return error_body(422, "quota_exceeded", "A quota of this owner is used up; an admin may raise it.", exc.errors)


@api.post("/owners/")
@documented(summary="Create an owner and its first token (admin)", ok=201, answer=OwnerCreatedOut,
            body=OwnerIn, errors=[403])
def create_owner() -> tuple[Response, int]:
    _admin_only()
    data = _body(_schema(OwnerIn))
    if db.session.scalar(select(Owner).where(Owner.name == data["name"])) is not None:
        raise ApiError(422, "validation_error", "The request body is invalid.",
                       {"name": [f"an owner named {data['name']!r} exists already"]})
    now = clock.utcnow()
    owner = Owner(name=data["name"], is_admin=data["is_admin"], created_at=now)
    db.session.add(owner)
    db.session.flush()
    issued = issue(owner, "first token", now)
    _record(owner, "owner.created", now, {"is_admin": owner.is_admin})
    db.session.commit()
    return _created({**owner_out(owner), "token": token_out(issued.token, issued.secret)})


@api.delete("/owners/<int:owner_id>/")
@documented(summary="Delete an owner and everything it owns (admin)", ok=204, errors=[403, 404])
def delete_owner(owner_id: int) -> tuple[str, int]:
    """Everything of the owner goes with it: tokens (and so console sessions), workflows, schedules with their
    runs and pending links, webhooks, events, deliveries and their attempts. What stays, for admins only, is
    the audit trail of its schedules (GET /schedules/{id}/events/) and the record that it was deleted, by
    whom (GET /audit/owners/)."""
    admin = _admin_only()
    owner = db.session.get(Owner, owner_id) if owner_id <= INT_MAX else None
    if owner is None:
        raise not_found("owner", owner_id)
    if owner.id == admin.id:
        raise ApiError(400, "invalid_state", "An admin cannot delete their own owner.")
    from app import schedules

    now = clock.utcnow()
    ids = list(db.session.scalars(select(ScheduledJob.id).where(ScheduledJob.owner_id == owner_id)))
    schedules.remove(ids, now)  # their runs and pending links go too
    outbox.remove_owner(owner_id)
    db.session.execute(delete(Workflow).where(Workflow.owner_id == owner_id))
    _record(owner, "owner.deleted", now, {"schedules": len(ids)})
    db.session.execute(delete(Owner).where(Owner.id == owner_id))  # tokens and console sessions by cascade
    db.session.commit()
    return "", 204


def _record(owner: Owner, action: str, now: datetime, changes: dict[str, object]) -> None:
    actor = caller()
    db.session.add(OwnerEvent(owner_id=owner.id, owner_name=owner.name, actor_id=actor.id, actor_name=actor.name,
                              action=action, at=now, changes=changes))


@api.get("/audit/owners/")
@documented(summary="Owners made and deleted, and by whom, newest first (admin)", answer=OwnerEventPage,
            query=PageIn, errors=[403])
def list_owner_events() -> Response:
    _admin_only()
    page = _query(_schema(PageIn))
    total = db.session.scalar(select(func.count()).select_from(OwnerEvent))
    rows = db.session.scalars(select(OwnerEvent).order_by(OwnerEvent.id.desc())
                              .limit(page["limit"]).offset(page["offset"]))
    return jsonify({"items": [dump(OwnerEventOut, e) for e in rows], "total": total})


@api.get("/schedules/<schedule_id>/events/")
@documented(summary="Who changed a schedule, newest first", answer=EventPage, query=PageIn, errors=[404])
def list_events(schedule_id: str) -> Response:
    """Newest first; kept after the schedule is deleted, so "who deleted it?" has an answer too."""
    page = _query(_schema(PageIn))
    mine = scoped(select(ScheduleEvent), ScheduleEvent).where(ScheduleEvent.schedule_id == _known_shape(schedule_id))
    total = db.session.scalar(select(func.count()).select_from(mine.subquery()))
    if not total and get_owned(ScheduledJob, schedule_id) is None:
        raise not_found("schedule", schedule_id)
    rows = db.session.scalars(
        mine.order_by(ScheduleEvent.at.desc(), ScheduleEvent.id.desc()).limit(page["limit"]).offset(page["offset"]))
    return jsonify({"items": [event_out(e) for e in rows], "total": total})

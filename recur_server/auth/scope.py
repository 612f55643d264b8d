"""The one place that limits queries to the caller's own rows (DESIGN 11): views never filter by owner
themselves, so a view that forgets cannot leak another owner's workflow, schedule, runs or events."""

from __future__ import annotations

from typing import Any, TypeVar

from flask import g
from sqlalchemy import Select, select

from recur_server.auth.models import Owner
from recur_server.infra.extensions import db

M = TypeVar("M")


def caller() -> Owner:
    """The owner the request's token names (set by recur_server.api.authentication before any API view runs)."""
    owner: Owner = g.owner
    return owner


def scoped(statement: Select[Any], model: Any, owner_id: int | None = None) -> Select[Any]:
    """`statement` limited to the caller's rows of `model`; an admin sees all, or one owner's with `owner_id`."""
    owner = caller()
    if not owner.is_admin:
        return statement.where(model.owner_id == owner.id)
    if owner_id is not None:
        return statement.where(model.owner_id == owner_id)
    return statement


def get_owned(model: type[M], ident: object, for_update: bool = False) -> M | None:
    """The caller's row of `model` with this primary key, or None (another owner's row is not there)."""
    statement = scoped(select(model), model).where(model.id == ident)  # type: ignore[attr-defined]
    if for_update:
        statement = statement.with_for_update()
    return db.session.scalars(statement.execution_options(populate_existing=True)).first()

"""Which schedules the code declares: the (owner, key) pairs sync made. A keyed schedule without a mark was
made through the API (or `recur apply`), and sync leaves it alone."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from recur_server.infra.extensions import db
from recur_server.models import UTCDateTime


class DeclaredKey(db.Model):  # type: ignore[name-defined,misc]
    """A key of an owner's schedules that a declaration in code holds. Written in the transaction that
    creates the schedule, so a schedule sync made is never mistaken for one made through the API; kept
    while its declaration is removed and the schedule paused, dropped when prune deletes the schedule."""

    __tablename__ = "declared_keys"

    owner_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())

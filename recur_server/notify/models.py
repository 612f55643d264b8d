"""Webhooks, the outbox of events, and the delivery of each event to each webhook with its attempts."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from recur_server.infra.extensions import db
from recur_server.models import UTCDateTime


class Webhook(db.Model):  # type: ignore[name-defined,misc]
    __tablename__ = "webhooks"
    __table_args__ = {"sqlite_autoincrement": True}  # DESIGN 14: ids are never reused

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("owners.id", ondelete="CASCADE"), index=True)
    url: Mapped[str] = mapped_column(String(2000))
    event_types: Mapped[Any] = mapped_column(JSON)  # list of event type names
    # Recur signs every delivery with it, so it is kept as given (a digest could not sign); it is shown
    # once, in the answer that made the webhook, and never again.
    secret: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class Event(db.Model):  # type: ignore[name-defined,misc]
    """The outbox: one row per event, written in the same transaction as the change it reports."""

    __tablename__ = "events"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)  # "evt_" + 32 hex: the receivers' dedup key
    owner_id: Mapped[int] = mapped_column(Integer, index=True)
    type: Mapped[str] = mapped_column(String(40))
    occurred_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)  # retention's walk, oldest first
    data: Mapped[Any] = mapped_column(JSON)


class Delivery(db.Model):  # type: ignore[name-defined,misc]
    """One event to one webhook: pending until a 2xx answer (delivered) or a day of retries (failed), or
    dropped (with a reason) when, at send time, the webhook is gone, belongs to another owner or no longer
    subscribes to the event's type.

    No foreign key to the webhook: the event's transaction (a run's finish) must never fail because the
    webhook was deleted meanwhile; delivering a deleted webhook's row only marks it dropped."""

    __tablename__ = "deliveries"
    __table_args__ = (
        UniqueConstraint("webhook_id", "event_id", name="uq_deliveries_webhook_event"),
        Index("ix_deliveries_due", "status", "next_attempt_at"),
        # The fair pick: each owner's due deliveries, oldest first (recur_server.notify.delivery).
        Index("ix_deliveries_owner_due", "status", "owner_id", "next_attempt_at"),
        # A webhook's pending deliveries, counted beside its attempts.
        Index("ix_deliveries_webhook_status", "webhook_id", "status"),
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    webhook_id: Mapped[int] = mapped_column(Integer)
    # The event's owner: deliveries are shared out fairly between owners, and deleted with their owner.
    owner_id: Mapped[int] = mapped_column(Integer)
    # Indexed for retention: an event goes only once no delivery of it is left.
    event_id: Mapped[str] = mapped_column(ForeignKey("events.id", ondelete="CASCADE"), index=True)
    status: Mapped[str] = mapped_column(String(16))  # pending, delivered, failed, dropped
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    reason: Mapped[str | None] = mapped_column(Text, nullable=True)  # why it was dropped or given up
    # When an owner last asked for it to be sent again (recur_server.notify.redelivery): its day counts from then.
    redelivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class DeliveryAttempt(db.Model):  # type: ignore[name-defined,misc]
    __tablename__ = "delivery_attempts"
    # A webhook's attempts, newest first a page at a time: one range of (webhook_id, id).
    __table_args__ = (Index("ix_delivery_attempts_webhook", "webhook_id", "id"),
                      {"sqlite_autoincrement": True})  # DESIGN 14: ids are never reused

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    delivery_id: Mapped[int] = mapped_column(ForeignKey("deliveries.id", ondelete="CASCADE"), index=True)
    webhook_id: Mapped[int] = mapped_column(Integer)
    event_id: Mapped[str] = mapped_column(String(40))
    event_type: Mapped[str] = mapped_column(String(40))
    attempt: Mapped[int] = mapped_column(Integer)
    at: Mapped[datetime] = mapped_column(UTCDateTime())
    status_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    duration_ms: Mapped[int] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    # Set on the log's entry for a request to send it again (who asked); such an entry sent nothing.
    requested_by: Mapped[str | None] = mapped_column(String(200), nullable=True)

"""The field types and limits every resource's schemas share.

Every integer has a maximum that the databases (INTEGER: 2^31-1), signal.alarm and the time arithmetic
accept; every instant lies in the supported range of recur_server.timing ([1970-01-01, 3000-01-01) UTC).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, TypeVar

from marshmallow import Schema, ValidationError, fields, validate

from recur_server import timing
from recur_server.timing import iso as iso  # re-exported: the API's views import it from here

# The documented maxima. INT_MAX is PostgreSQL's INTEGER, the type of every integer column.
INT_MAX = 2**31 - 1
MAX_OFFSET = INT_MAX


def whole(minimum: int, maximum: int, **kwargs: Any) -> fields.Integer:
    """A JSON integer (never a string of digits) in [minimum, maximum]."""
    return fields.Integer(strict=True, validate=validate.Range(min=minimum, max=maximum), **kwargs)


class Instant(fields.AwareDateTime):
    """An ISO 8601 date-time (UTC when it has no offset) inside the supported range, checked in UTC so
    that an offset cannot push it out of the calendar (0001-01-01T00:00+01:00, 9999-12-31T23:00-14:00)."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> datetime:
        parsed: datetime = super()._deserialize(value, attr, data, **kwargs)
        try:
            timing.supported(parsed, attr or "instant")
        except timing.TimingError as exc:
            raise ValidationError(exc.message) from None
        return parsed  # as given: callers round up to whole seconds (never early), not down to milliseconds


def instant(example: str | None = None, **kwargs: Any) -> Instant:
    """An instant in a request, with an example for the document."""
    return Instant(default_timezone=UTC, metadata={"example": example} if example else {}, **kwargs)


class Iso(fields.DateTime):
    """An instant in an answer, as recur_server.timing's `iso` writes it."""

    def _serialize(self, value: Any, attr: str | None, obj: Any, **kwargs: Any) -> str | None:
        return timing.iso_or_none(value)


F = TypeVar("F", bound=fields.Field)  # type: ignore[type-arg]


def defaulted(field: F, value: Any) -> F:
    """A field of a create body with the value a create that leaves it out gets, written in the document
    (`default`) and read by `defaults`: what a sync puts back when a declaration stops giving the field, and
    what `recur apply --prune` puts back into a workflow."""
    field.metadata = {**field.metadata, "default": value}
    return field


def defaults(schema: type[Schema]) -> dict[str, Any]:
    """Each field of `schema` that has a default (`defaulted`), with it."""
    return {name: field.metadata["default"] for name, field in schema._declared_fields.items()
            if "default" in field.metadata}


def out(field: fields.Field[Any]) -> fields.Field[Any]:
    """A field of an answer: always present (null where allow_none)."""
    field.required = True
    return field


class Joined:
    """An object with a few values beside it, read by a schema as if they were its own attributes (a schedule
    with its next runs, a token with its secret): the answer is still dumped through the declared schema."""

    def __init__(self, base: Any, **extra: Any) -> None:
        self._base = base
        self.__dict__.update(extra)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._base, name)

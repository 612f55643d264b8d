"""What every resource shares: the error body, a page's query (with its cursor) and a page's answer."""

from __future__ import annotations

from typing import Any

from marshmallow import RAISE, Schema, ValidationError, fields, validate

from recur_server.infra import cursors
from recur_server.schemas.fields import INT_MAX, out
from recur_server.services.queries import MAX_OFFSET, TOTAL_CAP, Order


class ErrorOut(Schema):
    """Every error the API answers, whatever raised it (recur_server/api/errors.py)."""

    code = out(fields.String())
    status = out(fields.Integer())
    message = out(fields.String())
    errors = out(fields.Dict(keys=fields.String(), values=fields.List(fields.String())))


class Cursor(fields.Field[cursors.Key]):
    """A cursor an answer of this list gave (`next`), read into the sort key it stands for; anything else is
    refused."""

    def __init__(self, order: Order, **kwargs: Any) -> None:
        super().__init__(metadata={
            "type": "string", "minLength": 1, "maxLength": cursors.MAX_LENGTH, "pattern": cursors.pattern(order.shape),
            "description": "The `next` of the page before: the page that follows it (the sort key of that "
                           "page's last row; any value of this pattern is taken)."}, **kwargs)
        self.order = order

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> cursors.Key:
        try:
            if not isinstance(value, str):
                raise ValueError("not a cursor")
            return cursors.decode(value, self.order.shape)
        except ValueError:
            raise ValidationError("is not a cursor this list gave (its answer's `next`).") from None


class PageIn(Schema):
    """A page of a list: the first (no cursor), or the one after a cursor (a subclass declares `cursor` for
    its list's order); an offset skips rows from there, at most MAX_OFFSET."""

    class Meta:
        unknown = RAISE

    limit = fields.Integer(validate=validate.Range(min=1, max=1000), load_default=50)
    offset = fields.Integer(load_default=0, validate=validate.Range(
        min=0, max=MAX_OFFSET, error=f"must be 0 to {MAX_OFFSET}; page deeper with `cursor` (the answer's `next`)."))


class OwnedPageIn(PageIn):
    """A page of a list an admin may narrow to one owner's rows (a non-admin sees only their own anyway)."""

    owner_id = fields.Integer(validate=validate.Range(min=1, max=INT_MAX))


def page_of(item: type[Schema], **extra: fields.Field[Any]) -> type[Schema]:
    """The answer of a list: {"items": [item...], "total": rows in all pages, at most TOTAL_CAP,
    "total_capped": whether there are more, "next": the cursor of the page after} (and `extra` fields)."""
    declared: dict[str, fields.Field[Any]] = {
        "items": out(fields.List(fields.Nested(item))),
        "total": out(fields.Integer(metadata={"description": f"The rows of all pages, counted up to {TOTAL_CAP:,}."})),
        "total_capped": out(fields.Boolean(metadata={
            "description": f"true: the list holds more than `total` ({TOTAL_CAP:,}) rows, which were not counted."})),
        "next": out(fields.String(allow_none=True, metadata={
            "description": "The cursor of the page after this one (give it as `cursor`); null on the last page."})),
    }
    return Schema.from_dict({**declared, **extra}, name=f"{item.__name__.removesuffix('Out')}Page")

"""What every resource shares: the error body, a page's query and a page's answer."""

from __future__ import annotations

from typing import Any

from marshmallow import RAISE, Schema, fields, validate

from app.api.schemas.fields import INT_MAX, MAX_OFFSET, out


class ErrorOut(Schema):
    """Every error the API answers, whatever raised it (app/api/errors.py)."""

    code = out(fields.String())
    status = out(fields.Integer())
    message = out(fields.String())
    errors = out(fields.Dict(keys=fields.String(), values=fields.List(fields.String())))


class PageIn(Schema):
    class Meta:
        unknown = RAISE

    limit = fields.Integer(validate=validate.Range(min=1, max=1000), load_default=50)
    offset = fields.Integer(validate=validate.Range(min=0, max=MAX_OFFSET), load_default=0)


class OwnedPageIn(PageIn):
    """A page of a list an admin may narrow to one owner's rows (a non-admin sees only their own anyway)."""

    owner_id = fields.Integer(validate=validate.Range(min=1, max=INT_MAX))


def page_of(item: type[Schema], **extra: fields.Field[Any]) -> type[Schema]:
    """The answer of a list: {"items": [item...], "total": rows in all pages} (and `extra` fields)."""
    declared: dict[str, fields.Field[Any]] = {"items": out(fields.List(fields.Nested(item))),
                                              "total": out(fields.Integer())}
    return Schema.from_dict({**declared, **extra}, name=f"{item.__name__.removesuffix('Out')}Page")

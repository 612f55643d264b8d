"""How the API reads what a request sends (webargs, for flask-smorest's @blp.arguments): a JSON body through
recur_server.api.bodies (storable values, bounded depth, 400s for what is not a JSON object), a query string as one
value a name, and every refusal in Recur's error shape, naming each field and the reason."""

from __future__ import annotations

from typing import Any, NoReturn

from flask import Request
from marshmallow import EXCLUDE, Schema, ValidationError
from webargs import core
from webargs.flaskparser import FlaskParser

from recur_server.api import bodies
from recur_server.api.errors import validation_error

# A body the operation may leave out (a pause's note, a trigger's overlap): none at all reads as {}.
OPTIONAL_JSON = "optional_json"

_REFUSED = {"query": "The query string is invalid.", "headers": "The request headers are invalid."}


class RecurParser(FlaskParser):
    # Bodies and query strings refuse names they do not know (their schemas say RAISE); headers are many.
    DEFAULT_UNKNOWN_BY_LOCATION = {**FlaskParser.DEFAULT_UNKNOWN_BY_LOCATION, "query": None, "json": None,
                                   OPTIONAL_JSON: None, "headers": EXCLUDE}
    __location_map__ = {**FlaskParser.__location_map__, OPTIONAL_JSON: "load_optional_json"}

    def load_json(self, req: Request, schema: Schema) -> Any:
        return bodies.json_object()

    def load_optional_json(self, req: Request, schema: Schema) -> Any:
        return bodies.json_object() if req.get_data(cache=True) else core.missing

    def load_querystring(self, req: Request, schema: Schema) -> Any:
        return req.args.to_dict()  # the first value of a repeated name, as before

    def handle_error(self, error: ValidationError, req: Request, schema: Schema, *, error_status_code: int | None,
                     error_headers: Any) -> NoReturn:
        [(location, messages)] = error.messages.items() if isinstance(error.messages, dict) else [("json", {})]
        raise validation_error(messages if isinstance(messages, dict) else {"_schema": messages},
                               _REFUSED.get(location, "The request body is invalid."))

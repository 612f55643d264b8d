"""The API's contract: each view declares what it takes and answers (`documented`), and the OpenAPI 3
document is generated from those declarations and the marshmallow schemas the views validate and dump
with. Served at /api/openapi.json, with Swagger UI at /api/docs/ from the installed swagger-ui-bundle
package (no CDN: it works offline).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin
from flask import Blueprint, Flask, Response, current_app, send_from_directory
from marshmallow import Schema

from app.api.schemas import ErrorOut

F = TypeVar("F", bound=Callable[..., Any])

TITLE = "Recur API"
VERSION = "1.0"

# What every error status means; each is answered in ErrorOut's shape.
_ERRORS = {
    400: "Malformed request: not JSON, not an object, or a request line or header gunicorn refused.",
    401: "No API token, or a malformed, unknown, revoked or expired one (`WWW-Authenticate: Bearer`).",
    403: "Only an admin may do this.",
    404: "No such object for this caller (another owner's objects are absent too).",
    409: "A schedule of the same owner has this key already.",
    413: "The body is larger than RECUR_MAX_BODY_BYTES.",
    414: "The request line is too long.",
    422: "A field is invalid: `errors` names each field and the reason.",
    431: "A request header is too large, or there are too many.",
    503: "Redis or the database is unreachable; nothing was changed.",
}
# Answers any request can get before its view runs (gunicorn's limits, the body limit, the services).
_ALWAYS = (400, 414, 431, 503)


def documented(*, summary: str, ok: int = 200, answer: type[Schema] | None = None, body: type[Schema] | None = None,
               query: type[Schema] | None = None, errors: Iterable[int] = (), auth: bool = True,
               extra: dict[int, tuple[str, type[Schema] | None]] | None = None,
               body_optional: bool = False) -> Callable[[F], F]:
    """Declare a view's operation: its success status and answer, its body and query schemas, the error
    statuses it can answer beyond those every operation can (body_optional: the body may be left out)."""

    def mark(view: F) -> F:
        view._contract = {  # type: ignore[attr-defined]
            "summary": summary, "ok": ok, "answer": answer, "body": body, "query": query,
            "errors": set(errors), "auth": auth, "extra": extra or {}, "doc": (view.__doc__ or "").strip(),
            "body_optional": body_optional,
        }
        return view

    return mark


_PARAM = re.compile(r"<(?:(\w+):)?(\w+)>")


def build(app: Flask) -> dict[str, Any]:
    """The OpenAPI document of every documented view registered on `app`."""
    spec = APISpec(title=TITLE, version=VERSION, openapi_version="3.0.3", plugins=[MarshmallowPlugin()],
                   info={"description": "Recurring jobs as self-rescheduling RQ chains. Every operation but health "
                                        "needs `Authorization: Bearer <token>`."})
    spec.components.security_scheme("bearerAuth", {"type": "http", "scheme": "bearer"})
    spec.components.schema("Error", schema=ErrorOut)
    for status, text in _ERRORS.items():
        spec.components.response(f"E{status}", {
            "description": text, "content": {"application/json": {"schema": "Error"}}})
    paths: dict[str, dict[str, Any]] = {}
    for rule in sorted(app.url_map.iter_rules(), key=lambda r: r.rule):
        contract = getattr(app.view_functions.get(rule.endpoint), "_contract", None)
        if contract is None:
            continue
        path = _PARAM.sub(lambda m: "{" + m.group(2) + "}", rule.rule)
        params = [{"name": name, "in": "path", "required": True,
                   "schema": {"type": "integer", "minimum": 0} if conv == "int" else {"type": "string"}}
                  for conv, name in _PARAM.findall(rule.rule)]
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            paths.setdefault(path, {})[method.lower()] = _operation(rule.endpoint, contract, params)
    for path, operations in paths.items():
        spec.path(path=path, operations=operations)
    return spec.to_dict()


def _operation(endpoint: str, contract: dict[str, Any], params: list[dict[str, Any]]) -> dict[str, Any]:
    errors = set(_ALWAYS) | contract["errors"]
    if contract["auth"]:
        errors.add(401)
    if contract["body"] is not None:
        errors |= {413, 422}
    if contract["query"] is not None:
        errors.add(422)
    ok: dict[str, Any] = {"description": "OK"}
    if contract["answer"] is not None:
        ok["content"] = {"application/json": {"schema": contract["answer"]}}
    responses: dict[Any, Any] = {str(contract["ok"]): ok}
    for status, (text, schema) in contract["extra"].items():
        responses[str(status)] = {"description": text,
                                  **({"content": {"application/json": {"schema": schema}}} if schema else {})}
    for status in sorted(errors):
        responses.setdefault(str(status), f"E{status}")
    operation: dict[str, Any] = {"operationId": endpoint.replace(".", "_"), "summary": contract["summary"],
                                 "responses": responses, "parameters": list(params)}
    if contract["doc"]:
        operation["description"] = contract["doc"]
    if contract["query"] is not None:
        operation["parameters"].append({"in": "query", "schema": contract["query"]})
    if contract["body"] is not None:
        operation["requestBody"] = {"required": not contract["body_optional"],
                                    "content": {"application/json": {"schema": contract["body"]}}}
    operation["security"] = [{"bearerAuth": []}] if contract["auth"] else []
    return operation


docs = Blueprint("contract", __name__, url_prefix="/api")

_DOCS_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Recur API</title>
<link rel="stylesheet" href="{base}/swagger-ui.css"></head>
<body><div id="swagger-ui"></div>
<script src="{base}/swagger-ui-bundle.js"></script>
<script src="{base}/swagger-ui-standalone-preset.js"></script>
<script src="{base}/recur-docs.js"></script>
</body></html>
"""

_DOCS_SCRIPT = """window.ui = SwaggerUIBundle({
  url: "/api/openapi.json", dom_id: "#swagger-ui", deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset], layout: "StandaloneLayout"
});
"""


@docs.get("/openapi.json")
def openapi() -> Response:
    document = current_app.extensions.get("recur.openapi")
    if document is None:  # built once per process, on first request: no work at import or app creation
        document = current_app.extensions["recur.openapi"] = json.dumps(build(current_app))
    return Response(document, mimetype="application/json")


@docs.get("/docs/")
def docs_page() -> Response:
    return Response(_DOCS_PAGE.format(base="/api/docs/assets"), mimetype="text/html")


@docs.get("/docs/assets/recur-docs.js")
def docs_script() -> Response:
    return Response(_DOCS_SCRIPT, mimetype="text/javascript")


@docs.get("/docs/assets/<path:name>")
def docs_asset(name: str) -> Response:
    from swagger_ui_bundle import swagger_ui_path  # Swagger UI's own files, from the installed package

    return send_from_directory(swagger_ui_path, name)

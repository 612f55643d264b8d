"""The API's one Blueprint: flask-smorest's, reading requests with Recur's parser (recur_server/api/parsing.py) and
writing into every operation what the operations share: its operationId (`<method>_<endpoint>`), whether it
needs a token (recur_server.api.authentication decides; the document says the same), and the error statuses a request
can
get from what the operation declares. Each resource module registers its MethodViews on `api`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from flask.views import MethodView
from flask_smorest import Blueprint

from recur_server.api.authentication import OPEN_ENDPOINTS
from recur_server.api.parsing import OPTIONAL_JSON, RecurParser

# Answers any request can get before its view runs: gunicorn's limits (400, 414, 431) and the services (503).
ALWAYS = (400, 414, 431, 503)
F = TypeVar("F", bound=Callable[..., Any])
V = TypeVar("V", bound=type[MethodView])


class ApiBlueprint(Blueprint):  # type: ignore[misc]
    ARGUMENTS_PARSER = RecurParser()
    DEFAULT_LOCATION_CONTENT_TYPE_MAPPING = {**Blueprint.DEFAULT_LOCATION_CONTENT_TYPE_MAPPING,
                                             OPTIONAL_JSON: "application/json"}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Private to flask-smorest, though its maintainer names it as a Blueprint subclass's extension point
        # (flask-smorest#123); the public way, an apispec plugin given to the Api (spec_kwargs extra_plugins),
        # would take this rule out of the blueprint. Pinned for it in pyproject.toml; tests/test_api_document.py
        # fails if it changes.
        self._prepare_doc_cbks.append(_error_statuses)

    def arguments(self, schema: Any, *, location: str = "json", required: bool = True,
                  **kwargs: Any) -> Callable[[F], F]:
        """flask-smorest's, where `required=False` on a body also means that no body at all reads as {}."""
        if location == "json" and not required:
            location = OPTIONAL_JSON
        decorate: Callable[[F], F] = super().arguments(schema, location=location, required=required, **kwargs)
        return decorate

    # flask-smorest's decorators, typed: they return the view they are given, wrapped.
    def route(self, rule: str, *, parameters: Any = None, tags: Any = None, **options: Any) -> Callable[[V], V]:
        decorate: Callable[[V], V] = super().route(rule, parameters=parameters, tags=tags, **options)
        return decorate

    def response(self, status_code: int, schema: Any = None, **kwargs: Any) -> Callable[[F], F]:
        decorate: Callable[[F], F] = super().response(status_code, schema, **kwargs)
        return decorate

    def alt_response(self, status_code: int, response: Any = None, **kwargs: Any) -> Callable[[F], F]:
        decorate: Callable[[F], F] = super().alt_response(status_code, response, **kwargs)
        return decorate

    def errors(self, *statuses: int) -> Callable[[F], F]:
        """Document the errors an operation answers beyond those every request can get (404, 403, 409)."""

        def decorate(view: F) -> F:
            for status in statuses:
                view = self.alt_response(status, response=f"E{status}")(view)
            return view

        return decorate

    def add_url_rule(self, rule: str, endpoint: str | None = None, view_func: Any = None,
                     provide_automatic_options: bool | None = None, **options: Any) -> None:
        if isinstance(view_func, type) and issubclass(view_func, MethodView) and endpoint is not None:
            open_to_all = f"{self.name}.{endpoint}" in OPEN_ENDPOINTS
            for method in view_func.methods or ():
                function = getattr(view_func, method.lower())
                # Where @blp.doc keeps its arguments (private to flask-smorest, pinned in pyproject.toml, held by
                # tests/test_api_document.py): written in place, as setdefault, so a view's own @blp.doc wins
                # and the view is not wrapped again.
                manual = function.__dict__.setdefault("_apidoc", {}).setdefault("manual_doc", {})
                manual.setdefault("operationId", f"{method.lower()}_{endpoint}")
                manual.setdefault("security", [] if open_to_all else [{"bearerAuth": []}])
        super().add_url_rule(rule, endpoint, view_func, provide_automatic_options, **options)


def _error_statuses(doc: dict[str, Any], doc_info: dict[str, Any], **_: Any) -> dict[str, Any]:
    """Every error status the operation can answer, each in the error shape (the E<status> responses)."""
    responses = {str(status): answer for status, answer in doc.get("responses", {}).items()}
    statuses = set(ALWAYS)
    if doc_info.get("manual_doc", {}).get("security"):
        statuses.add(401)
    if "requestBody" in doc:
        statuses |= {413, 422}
    if any(isinstance(p, Mapping) and p.get("in") in ("query", "header") for p in doc.get("parameters", [])):
        statuses.add(422)
    for status in statuses:
        if not isinstance(responses.get(str(status)), Mapping):  # a status with an answer of its own keeps it
            responses[str(status)] = f"E{status}"
    for code, answer in responses.items():  # flask-smorest's own references (422 of @arguments) become ours
        if isinstance(answer, str) and int(code) >= 400:
            responses[code] = f"E{code}"
    doc["responses"] = dict(sorted(responses.items()))
    return doc


api = ApiBlueprint("api", __name__, url_prefix="/api/v1")

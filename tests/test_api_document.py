"""What recur_server/api/blueprint.py writes into every operation of the OpenAPI document through two private names of
flask-smorest (pyproject.toml pins it to one minor version for them): `Blueprint._prepare_doc_cbks`, the
callbacks each operation's doc goes through (where the error statuses are added), and a view function's
`_apidoc["manual_doc"]`, where `@blp.doc` keeps what it is given (where operationId and security are set).
An upgrade that renames or reshapes either fails here, rather than leaving a document that has silently lost
its operationIds, its security or its error statuses."""

from __future__ import annotations

import re
from typing import Any

from flask import Flask
from flask.views import MethodView
from flask_smorest import Api, Blueprint

from harness.servers import LOOPBACK_EGRESS
from recur_server.api.authentication import OPEN_ENDPOINTS
from recur_server.api.blueprint import ALWAYS


def test_a_doc_callback_gets_each_operation_and_its_doc_info_and_the_manual_doc_is_merged_after_it() -> None:
    """The call shape ApiBlueprint relies on, on a bare flask-smorest Api: a callback appended to
    _prepare_doc_cbks is called as (doc, doc_info, api=, app=, spec=, method=) after flask-smorest's own (the
    responses they wrote are in `doc`), sees the manual doc in doc_info["manual_doc"], and what it returns is
    the operation, with the manual doc (written into the view's _apidoc, as @blp.doc writes it) over it."""
    app = Flask("probe")
    app.config.update(API_TITLE="probe", API_VERSION="1", OPENAPI_VERSION="3.0.3")
    api = Api(app)
    blueprint = Blueprint("probe", __name__, url_prefix="/probe")
    assert isinstance(blueprint._prepare_doc_cbks, list)
    seen: list[tuple[Any, ...]] = []

    def callback(doc: dict[str, Any], doc_info: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        seen.append((set(doc["responses"]), doc_info.get("manual_doc"), sorted(kwargs), kwargs["method"]))
        doc["responses"]["418"] = "E418"
        return doc

    blueprint._prepare_doc_cbks.append(callback)

    class Probe(MethodView):
        @blueprint.response(200)
        def get(self) -> dict[str, str]:
            return {}

    Probe.get.__dict__.setdefault("_apidoc", {}).setdefault("manual_doc", {}).update(
        operationId="get_probe", security=[])
    assert Blueprint.doc(summary="s")(lambda: None)._apidoc["manual_doc"] == {"summary": "s"}  # @blp.doc's place
    blueprint.add_url_rule("/", "probe", Probe)
    api.register_blueprint(blueprint)

    assert seen == [({200, "default"}, {"operationId": "get_probe", "security": []}, ["api", "app", "method", "spec"],
                     "get")]
    operation = api.spec.to_dict()["paths"]["/probe/"]["get"]
    assert operation["operationId"] == "get_probe" and operation["security"] == []
    assert operation["responses"]["418"] == {"$ref": "#/components/responses/E418"}


def _endpoints(app: Flask) -> dict[tuple[str, str], str]:
    """(path as the document writes it, method) -> the blueprint's endpoint name, for /api/v1/."""
    return {(re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", rule.rule), method.lower()): rule.endpoint
            for rule in app.url_map.iter_rules() if rule.rule.startswith("/api/v1/")
            for method in (rule.methods or set()) - {"HEAD", "OPTIONS"}}


def test_every_operation_has_its_operation_id_security_and_error_statuses(client) -> None:  # type: ignore[no-untyped-def]
    document = client.get("/api/openapi.json").get_json()
    endpoints = _endpoints(client.application)
    operations = [(path, method, operation) for path, item in document["paths"].items()
                  for method, operation in item.items() if method != "parameters"]
    assert operations and {(path, method) for path, method, _ in operations} == set(endpoints)
    ids = [operation["operationId"] for _, _, operation in operations]
    assert len(ids) == len(set(ids))
    for path, method, operation in operations:
        endpoint = endpoints[(path, method)]
        assert operation["operationId"] == f"{method}_{endpoint.split('.', 1)[1]}", (path, method)
        secured = endpoint not in OPEN_ENDPOINTS
        assert operation["security"] == ([{"bearerAuth": []}] if secured else []), (path, method)
        statuses = {int(code) for code in operation["responses"]}
        wanted = set(ALWAYS) | ({401} if secured else set()) | ({413, 422} if "requestBody" in operation else set())
        assert wanted <= statuses, (path, method, sorted(wanted - statuses))
        assert list(operation["responses"]) == sorted(operation["responses"]), (path, method)
        for code, answer in operation["responses"].items():
            # Every error answer is one of Recur's E<status> responses, flask-smorest's own 422 included; only a
            # status with an answer of its own (health's 503, with the health body) keeps it.
            if int(code) >= 400 and answer != {"$ref": f"#/components/responses/E{code}"}:
                assert "content" in answer and answer["description"], (path, method, code)
    health = document["paths"]["/api/v1/health/"]["get"]
    assert health["operationId"] == "get_health" and "401" not in health["responses"]
    assert health["responses"]["503"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/HealthOut"}


def test_the_document_is_written_when_first_read_once_per_process_the_same_for_every_app(app, client) -> None:  # type: ignore[no-untyped-def]
    """recur_server/api/document.py writes the document when it is first read (a worker never reads it), once per
    process and set of tasks: the apps made after share it, and it is the one an app writes anew."""
    import json

    from recur_server import create_app
    from recur_server.api import document as module
    from recur_server.tasks import task_names

    config = {"TESTING": True, "DATABASE_URL": app.config["SQLALCHEMY_DATABASE_URI"], "REDIS_URL": "redis://fake",
              "RECUR_TASK_MODULES": ["harness.jobs"], **LOOPBACK_EGRESS}
    first = client.get("/api/openapi.json").get_json()
    module._WRITTEN.clear()
    fresh = create_app(config)
    assert module._WRITTEN == {}  # an app's start writes nothing
    # The API routes and guards without its document: flask-smorest's own bookkeeping is done.
    assert fresh.test_client().get("/api/v1/workflows/").status_code == 401
    assert fresh.extensions["flask-smorest"]["blp_name_to_api"]["api"] is fresh.extensions["recur.openapi"]
    written = fresh.test_client().get("/api/openapi.json").get_json()
    assert list(module._WRITTEN) == [tuple(task_names())]
    assert written == first
    second = create_app(config)
    assert second.extensions["recur.openapi"].spec is fresh.extensions["recur.openapi"].spec
    assert second.test_client().get("/api/openapi.json").get_json() == written
    # flask-smorest's `openapi print` (`recur manage openapi print`) reads the same document.
    module._WRITTEN.clear()
    printed = create_app(config).test_cli_runner().invoke(args=["openapi", "print"])
    assert printed.exit_code == 0 and json.loads(printed.output) == written

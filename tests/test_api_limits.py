"""Bounded input: every class of request that once answered 500 now gets a 4xx naming what is wrong.

Each test pins one class the fuzz (tests/test_fuzz_*.py) found; run them on PostgreSQL too (RECUR_TEST_POSTGRES),
where integers past 2^31-1 and NUL bytes in text are refused by the database itself.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from sqlalchemy import update

from harness.chain_driver import fresh, make_schedule, scheduled_ids, step
from recur_server.chain.ids import link_id
from recur_server.infra.extensions import db
from recur_server.models import Schedule


def _workflow(client):
    response = client.post("/api/v1/workflows/", json={"name": "wf", "task": "builtin.noop"})
    assert response.status_code == 201, response.json
    return response.json["id"]


def _body(client, **fields):
    return {"name": "s", "workflow_id": _workflow(client), "interval_seconds": 60, **fields}


def _assert_error(response, status, field=None):
    assert response.status_code == status, response.get_data(as_text=True)[:500]
    body = response.json
    assert set(body) == {"code", "status", "message", "errors"} and body["status"] == status, body
    if field is not None:
        assert field in body["errors"], body
    return body


def _post_raw(client, url, text, method="post"):
    return getattr(client, method)(url, data=text, content_type="application/json")


# --- integers ----------------------------------------------------------------------------------------

INT_FIELDS = ["interval_seconds", "total_repeats", "max_retries", "timeout_seconds", "jitter_seconds", "workflow_id"]


@pytest.mark.parametrize("field", INT_FIELDS)
@pytest.mark.parametrize("value", [2**31, 2**63, 2**64])
def test_huge_integers_are_422_naming_the_field(client, field, value):
    _assert_error(client.post("/api/v1/schedules/", json=_body(client, **{field: value})), 422, field)


@pytest.mark.parametrize("value", [2**31, 2**63, 10**12])
def test_huge_after_seconds_is_422(client, value):
    body = {"name": "s", "workflow_id": _workflow(client), "after_seconds": value}
    _assert_error(client.post("/api/v1/schedules/", json=body), 422, "after_seconds")


@pytest.mark.parametrize("field", ["total_repeats", "max_retries", "timeout_seconds", "jitter_seconds"])
def test_huge_integers_in_a_patch_are_422(client, field):
    created = client.post("/api/v1/schedules/", json=_body(client)).json
    _assert_error(client.patch(f"/api/v1/schedules/{created['id']}/", json={field: 2**31}), 422, field)
    assert client.get(f"/api/v1/schedules/{created['id']}/").status_code == 200


@pytest.mark.parametrize(("field", "largest"), [
    ("timeout_seconds", 604_800), ("max_retries", 1000), ("total_repeats", 2**31 - 1),
    ("interval_seconds", 316_224_000), ("jitter_seconds", 604_800),
])
def test_documented_maxima_are_accepted_and_one_more_is_not(client, field, largest):
    accepted = client.post("/api/v1/schedules/", json=_body(client, **{field: largest}))
    assert accepted.status_code == 201, accepted.json
    assert accepted.json[field] == largest
    _assert_error(client.post("/api/v1/schedules/", json=_body(client, **{field: largest + 1})), 422, field)


@pytest.mark.parametrize("query", ["offset=9223372036854775808", "offset=2147483648", "workflow_id=2147483648",
                                   "workflow_id=99999999999999999999", "limit=9223372036854775808"])
def test_huge_integers_in_query_strings_are_422(client, query):
    for path in ("/api/v1/schedules/", "/api/v1/workflows/"):
        if "workflow_id" in query and path == "/api/v1/workflows/":
            continue
        _assert_error(client.get(f"{path}?{query}"), 422, query.split("=")[0])


@pytest.mark.parametrize("segment", [str(2**31), str(2**63), str(10**40)])
def test_huge_workflow_ids_in_the_path_are_404(client, segment):
    _assert_error(client.get(f"/api/v1/workflows/{segment}/"), 404)
    _assert_error(client.delete(f"/api/v1/workflows/{segment}/"), 404)


# --- strings: NUL bytes and lone surrogates ------------------------------------------------------------

@pytest.mark.parametrize("bad", ["a\x00b", "\ud800", "x\udfffy"])
@pytest.mark.parametrize(("field", "template"), [
    ("name", "{}"), ("description", "{}"), ("trigger_node_id", "{}"), ("cron", "{}"), ("timezone", "{}"),
    ("trigger_payload", {"k": ["{}"]}), ("trigger_payload", {"{}": 1}), ("not_on", ["{}"]),
])
def test_nul_and_lone_surrogates_are_422_naming_the_field(client, bad, field, template):
    value = json.loads(json.dumps(template).replace("{}", json.dumps(bad)[1:-1]))
    body = _body(client, **{field: value})
    if field == "cron":
        body.pop("interval_seconds")
    text = json.dumps(body)  # ensure_ascii: the surrogate travels as a \\ud800 escape, as a client would send it
    _assert_error(_post_raw(client, "/api/v1/schedules/", text), 422, field)
    created = client.post("/api/v1/schedules/", json=_body(client)).json
    patch = {field: value} if field != "cron" else {"cron": value}
    _assert_error(_post_raw(client, f"/api/v1/schedules/{created['id']}/", json.dumps(patch), "patch"), 422, field)


def test_nul_and_surrogates_in_workflows_and_batch_delete_are_422(client):
    _assert_error(_post_raw(client, "/api/v1/workflows/", json.dumps({"name": "a\x00", "task": "builtin.noop"})),
                  422, "name")
    _assert_error(_post_raw(client, "/api/v1/workflows/", json.dumps({"name": "\ud800", "task": "builtin.noop"})),
                  422, "name")
    body = _assert_error(_post_raw(client, "/api/v1/schedules/batch-delete/",
                                   json.dumps({"schedule_ids": ["ok", "a\x00b"]})), 422)
    assert any(key.startswith("schedule_ids") for key in body["errors"]), body


@pytest.mark.parametrize("segment", ["%00", "a%00b", "%ED%A0%80", "x" * 5000, "not-a-uuid",
                                     "00000000-0000-0000-0000-00000000000G", "A" * 36])
def test_odd_schedule_ids_in_the_path_are_404(client, segment):
    for method, suffix in (("get", ""), ("patch", ""), ("delete", ""), ("post", "pause/"), ("post", "resume/"),
                           ("get", "runs/")):
        kwargs = {"json": {"name": "x"}} if method == "patch" else {}
        response = getattr(client, method)(f"/api/v1/schedules/{segment}/{suffix}", **kwargs)
        _assert_error(response, 404)


def test_batch_delete_of_ids_that_are_not_uuids_reports_them_not_found(client):
    created = client.post("/api/v1/schedules/", json=_body(client)).json
    response = client.post("/api/v1/schedules/batch-delete/", json={"schedule_ids": [created["id"], "x" * 300]})
    assert response.status_code == 200, response.json
    assert response.json == {"deleted": [created["id"]], "not_found": ["x" * 300]}


# --- JSON structure -------------------------------------------------------------------------------------

@pytest.mark.parametrize("depth", [1000, 5000, 100_000])
def test_json_nested_thousands_deep_is_a_4xx(client, depth):
    for text in ("[" * depth + "]" * depth, '{"trigger_payload": ' + "[" * depth + "]" * depth + "}",
                 '{"a":' * depth + "1" + "}" * depth):
        for url in ("/api/v1/schedules/", "/api/v1/schedules/preview/", "/api/v1/workflows/",
                    "/api/v1/schedules/batch-delete/"):
            response = _post_raw(client, url, text)
            assert 400 <= response.status_code < 500, (url, response.status_code)
            _assert_error(response, response.status_code)


def test_trigger_payload_deeper_than_the_limit_is_422(client):
    ok = client.post("/api/v1/schedules/", json=_body(client, trigger_payload=_nested(30)))
    assert ok.status_code == 201, ok.json
    body = _assert_error(client.post("/api/v1/schedules/", json=_body(client, trigger_payload=_nested(200))), 422,
                         "trigger_payload")
    assert "deep" in body["errors"]["trigger_payload"][0]


def _nested(depth):
    value = 1
    for _ in range(depth):
        value = {"a": value}
    return value


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity", "1e999999", "[1e400]"])
def test_non_finite_numbers_are_refused(client, token):
    """Python's parser reads NaN, Infinity and 1e999999 as floats; JSON has no such numbers, and
    PostgreSQL's json type refuses them."""
    text = json.dumps(_body(client, trigger_payload="TOKEN")).replace('"TOKEN"', token)
    _assert_error(_post_raw(client, "/api/v1/schedules/", text), 422, "trigger_payload")


# --- dates ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("field", ["at", "start_at", "end_at", "anchor_date"])
@pytest.mark.parametrize("value", ["0001-01-01T00:00+01:00", "9999-12-31T23:00-14:00", "9999-12-31T23:59:59Z",
                                   "0001-01-01T00:00:00Z", "1969-12-31T23:59:59Z", "3000-01-01T00:00:00Z"])
def test_dates_outside_the_supported_range_are_422(client, field, value):
    body = _body(client, **{field: value})
    if field == "at":
        body.pop("interval_seconds")
    _assert_error(client.post("/api/v1/schedules/", json=body), 422, field)
    preview = {k: v for k, v in body.items() if k not in ("name", "workflow_id")}
    _assert_error(client.post("/api/v1/schedules/preview/", json=preview), 422, field)


def test_year_9999_start_at_is_refused_by_patch_and_a_stored_one_still_reads(client):
    created = client.post("/api/v1/schedules/", json=_body(client)).json
    client.post(f"/api/v1/schedules/{created['id']}/pause/")
    _assert_error(client.patch(f"/api/v1/schedules/{created['id']}/", json={"start_at": "9999-12-31T00:00:00Z"}),
                  422, "start_at")
    assert client.get(f"/api/v1/schedules/{created['id']}/").status_code == 200
    # A row that already holds such a value (as a PATCH of a paused schedule once stored) still reads back.
    db.session.execute(update(Schedule).where(Schedule.id == created["id"])
                       .values(start_at=datetime(9999, 12, 31, tzinfo=UTC)))
    db.session.commit()
    response = client.get(f"/api/v1/schedules/{created['id']}/")
    assert response.status_code == 200, response.json
    assert response.json["next_runs"] == []


# --- sizes ----------------------------------------------------------------------------------------------

def test_a_body_over_the_limit_is_413_in_the_error_shape(app, client):
    big = json.dumps(_body(client, description="x" * (1024 * 1024)))
    body = _assert_error(_post_raw(client, "/api/v1/schedules/", big), 413)
    assert "1048576" in body["message"]
    app.config["MAX_CONTENT_LENGTH"] = 100
    _assert_error(_post_raw(client, "/api/v1/workflows/", json.dumps({"name": "w" * 100, "task": "x"})), 413)


def test_an_apply_has_a_body_limit_of_its_own(app, client):
    # 1.5 MB of changes: over every other request's limit, within an apply's (it may carry 100,000 changes).
    deletes = json.dumps({"schedules": {"delete": [f"missing-key-{i:07d}" for i in range(70_000)]}})
    assert len(deletes) > 1024 * 1024
    for path in ("/api/v1/apply/", "/api/v1/apply/file/"):
        read = _post_raw(client, path, deletes)
        assert read.status_code == 422, read.json  # read and refused for what it says, not for its size
    app.config["RECUR_MAX_APPLY_BODY_BYTES"] = 1000
    body = _assert_error(_post_raw(client, "/api/v1/apply/", deletes), 413)
    assert "RECUR_MAX_APPLY_BODY_BYTES" in body["message"] and "1000 bytes" in body["message"], body
    body = _assert_error(_post_raw(client, "/api/v1/schedules/", deletes), 413)
    assert "(RECUR_MAX_BODY_BYTES)" in body["message"], body


def test_the_body_limit_comes_from_the_environment(monkeypatch):
    from recur_server.infra.config import Settings

    monkeypatch.setenv("RECUR_MAX_BODY_BYTES", "2048")
    monkeypatch.setenv("RECUR_MAX_PAYLOAD_BYTES", "1024")
    settings = Settings.from_env()
    assert settings.as_flask_config()["MAX_CONTENT_LENGTH"] == 2048
    assert settings.RECUR_MAX_PAYLOAD_BYTES == 1024


def test_a_trigger_payload_over_its_limit_is_422(client):
    fits = client.post("/api/v1/schedules/", json=_body(client, trigger_payload={"blob": "x" * 60_000}))
    assert fits.status_code == 201, fits.json
    body = _assert_error(client.post("/api/v1/schedules/", json=_body(client, trigger_payload={"blob": "x" * 70_000})),
                         422, "trigger_payload")
    assert "65536" in body["errors"]["trigger_payload"][0]
    _assert_error(client.patch(f"/api/v1/schedules/{fits.json['id']}/", json={"trigger_payload": ["y" * 70_000]}),
                  422, "trigger_payload")


# --- PATCH rules ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("field", ["interval_seconds", "every", "cron", "rrule", "at", "after_seconds"])
def test_patch_with_null_timing_is_422(client, field):
    created = client.post("/api/v1/schedules/", json=_body(client)).json
    _assert_error(client.patch(f"/api/v1/schedules/{created['id']}/", json={field: None}), 422, field)
    after = client.get(f"/api/v1/schedules/{created['id']}/").json
    assert after["interval_seconds"] == 60 and after["revision"] == created["revision"]


@pytest.mark.parametrize("field", ["timezone", "day_or", "jitter_seconds", "total_repeats", "max_retries",
                                   "timeout_seconds", "name", "workflow_id"])
def test_patch_with_null_where_null_means_nothing_is_422(client, field):
    created = client.post("/api/v1/schedules/", json=_body(client)).json
    _assert_error(client.patch(f"/api/v1/schedules/{created['id']}/", json={field: None}), 422, field)


def test_patch_with_null_clears_optional_constraints(client):
    created = client.post("/api/v1/schedules/", json=_body(client, only_between="00:00-23:59",
                                                             end_at="2999-01-01T00:00:00Z")).json
    patched = client.patch(f"/api/v1/schedules/{created['id']}/", json={"only_between": None, "end_at": None})
    assert patched.status_code == 200, patched.json
    assert (patched.json["only_between"], patched.json["end_at"]) == (None, None)


@pytest.mark.parametrize(("total", "status"), [(1, "done"), (2, "done"), (3, "active")])
def test_patch_total_repeats_at_or_below_run_count_makes_the_schedule_done(app, client, fake_clock, total, status):
    schedule = make_schedule(fake_clock.now, interval_seconds=60)
    step(app, fake_clock, extra_seconds=0.1)
    step(app, fake_clock, extra_seconds=0.1)
    assert fresh(schedule.id).run_count == 2
    db.session.rollback()
    assert scheduled_ids(app) == [link_id(schedule.id, 2, 0)]
    response = client.patch(f"/api/v1/schedules/{schedule.id}/", json={"total_repeats": total})
    assert response.status_code == 200, response.json
    assert response.json["status"] == status
    if status == "done":
        assert response.json["next_run_at"] is None and response.json["next_runs"] == []
        assert scheduled_ids(app) == []
        assert step(app, fake_clock) is None  # not one run more
        assert fresh(schedule.id).run_count == 2
    else:
        assert scheduled_ids(app) == [link_id(schedule.id, 2, 0)]


def test_patch_total_repeats_of_a_paused_schedule_at_its_run_count_makes_it_done(app, client, fake_clock):
    schedule = make_schedule(fake_clock.now, interval_seconds=60)
    step(app, fake_clock, extra_seconds=0.1)
    client.post(f"/api/v1/schedules/{schedule.id}/pause/")
    response = client.patch(f"/api/v1/schedules/{schedule.id}/", json={"total_repeats": 1})
    assert response.status_code == 200, response.json
    assert response.json["status"] == "done"
    _assert_error(client.post(f"/api/v1/schedules/{schedule.id}/resume/"), 409)


def test_a_breakers_answer_lists_its_newest_hundred_transitions_oldest_first(app, client):
    from datetime import timedelta

    from recur_server.models import BreakerTransition

    workflow_id = _workflow(client)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    db.session.add_all([BreakerTransition(workflow_id=workflow_id, from_state="closed", to_state="open",
                                          at=start + timedelta(minutes=n), reason=f"#{n}", by="system")
                        for n in range(150)])
    db.session.commit()
    answer = client.get(f"/api/v1/workflows/{workflow_id}/breaker/")
    assert answer.status_code == 200
    assert [t["reason"] for t in answer.json["history"]] == [f"#{n}" for n in range(50, 150)]

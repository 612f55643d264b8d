"""Property-based fuzz of the schedule bodies: create, PATCH and preview with field-aware bodies (every timing
kind, constraint and plain field, mostly valid with one bad value) get no 5xx, every 4xx has the API's error
shape, and what a PATCH stored still reads back. Values and encoders: harness/fuzz_values.py,
harness/fuzz_api.py; RECUR_FUZZ_EXAMPLES runs more examples."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from harness.fuzz_api import Failures, json_body, remember_created, seed_schedules, settings_for
from harness.fuzz_values import ints, patch_bodies, schedule_bodies


def test_fuzz_schedule_bodies(client):
    """Create, PATCH and preview with field-aware bodies: every timing kind, constraint and plain field."""
    workflow_id, ids = seed_schedules(client)

    @settings_for(2000)
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        action = data.draw(st.sampled_from(["create", "create", "patch", "patch", "preview"]))
        if action == "create":
            body = data.draw(schedule_bodies(workflow_id))
            response = client.post("/api/v1/schedules/", data=json_body(body), content_type="application/json")
            remember_created(ids, response)
            route = "POST /schedules/"
        elif action == "patch":
            target = ids[data.draw(st.integers(0, 10**6)) % len(ids)]
            body = data.draw(patch_bodies())
            response = client.patch(f"/api/v1/schedules/{target}/", data=json_body(body),
                                    content_type="application/json")
            route = "PATCH /schedules/<id>/"
            if response.status_code < 500:  # what a PATCH stored must still read back
                check = client.get(f"/api/v1/schedules/{target}/")
                failures.check("GET /schedules/<id>/ after PATCH", check, json.dumps(body)[:300])
        else:
            body = data.draw(schedule_bodies(workflow_id))
            if isinstance(body, dict):
                body.pop("name", None), body.pop("workflow_id", None)
                body["count"] = data.draw(st.one_of(st.just(100), ints))
            response = client.post("/api/v1/schedules/preview/", data=json_body(body), content_type="application/json")
            route = "POST /schedules/preview/"
        failures.check(route, response, json.dumps(body)[:300])

    with Failures() as failures:
        run()
    assert not failures.items, failures.report()

"""Every number a timing carries is bounded where it is read: an integer field at 2**31, 2**63 or 10**30, an
RRULE part out of RFC 5545's range or a BYDAY ordinal past the 53rd (5th in a month) is a 422 naming the
field on create, PATCH and preview, never a 500 or a 404 (FREQ=DAILY;INTERVAL=2**63 was a 500, and
FREQ=MONTHLY;BYDAY=54MO a 404 naming the request body)."""

from __future__ import annotations

from typing import Any

import pytest
from marshmallow import fields

from recur_server.schemas.schedules import ScheduleIn

HUGE = [2**31, 2**63, 10**30]


def _integer_fields() -> list[str]:
    names = []
    for name, field in ScheduleIn().fields.items():
        if isinstance(field, fields.Integer):
            names.append(name)
        elif isinstance(field, fields.Nested):
            names += [f"{name}.{inner}" for inner, f in field.schema.fields.items() if isinstance(f, fields.Integer)]
    return names


def _with(body: dict[str, Any], dotted: str, value: int) -> dict[str, Any]:
    head, _, rest = dotted.partition(".")
    if rest:
        return {**body, head: {"schedule": "x", rest: value}}
    return {**body, head: value}


@pytest.fixture
def made(client) -> dict[str, Any]:
    workflow = client.post("/api/v1/workflows/", json={"name": "w", "task": "builtin.noop"}).json["id"]
    schedule = client.post("/api/v1/schedules/", json={"name": "s", "workflow_id": workflow, "interval_seconds": 60})
    assert schedule.status_code == 201, schedule.json
    return {"workflow_id": workflow, "id": schedule.json["id"]}


@pytest.mark.parametrize("value", HUGE)
def test_every_integer_field_is_bounded(client, made, value: int) -> None:
    names = _integer_fields()
    assert {"interval_seconds", "jitter_seconds", "after.delay_seconds", "total_repeats"} <= set(names)
    base = {"name": "s", "workflow_id": made["workflow_id"], "interval_seconds": 60}
    for name in names:
        head = name.split(".")[0]
        created = client.post("/api/v1/schedules/", json=_with(base, name, value))
        assert created.status_code == 422 and {name, head} & set(created.json["errors"]), (name, created.json)
        changed = client.patch(f"/api/v1/schedules/{made['id']}/", json=_with({}, name, value))
        assert changed.status_code == 422 and {name, head} & set(changed.json["errors"]), (name, changed.json)


RULES = [f"FREQ=DAILY;INTERVAL={v}" for v in HUGE] + [f"FREQ=YEARLY;COUNT={v}" for v in HUGE] + [
    f"FREQ=YEARLY;{part}={v}" for part in ("BYMONTH", "BYMONTHDAY", "BYYEARDAY", "BYWEEKNO", "BYSETPOS",
                                          "BYHOUR", "BYMINUTE", "BYSECOND") for v in HUGE] + [
    f"FREQ=YEARLY;BYDAY={v}MO" for v in HUGE] + [
    "FREQ=MONTHLY;BYDAY=54MO", "FREQ=MONTHLY;BYDAY=6MO", "FREQ=YEARLY;BYDAY=-54FR", "FREQ=MONTHLY;BYDAY=0MO",
    "FREQ=WEEKLY;BYDAY=1MO", "FREQ=DAILY;INTERVAL=0", "FREQ=MONTHLY;BYMONTHDAY=0", "FREQ=MONTHLY;BYMONTHDAY=32",
    "FREQ=YEARLY;BYMONTH=13", "FREQ=DAILY;BYHOUR=24", "FREQ=DAILY;BYDAY=XX"]


@pytest.mark.parametrize("rule", RULES)
def test_an_rrule_part_out_of_range_is_a_422_naming_rrule(client, made, rule: str) -> None:
    created = client.post("/api/v1/schedules/", json={"name": "s", "workflow_id": made["workflow_id"], "rrule": rule})
    assert created.status_code == 422 and list(created.json["errors"]) == ["rrule"], created.json
    previewed = client.post("/api/v1/schedules/preview/", json={"rrule": rule})
    assert previewed.status_code == 422 and list(previewed.json["errors"]) == ["rrule"], previewed.json
    changed = client.patch(f"/api/v1/schedules/{made['id']}/", json={"rrule": rule})
    assert changed.status_code == 422 and list(changed.json["errors"]) == ["rrule"], changed.json


@pytest.mark.parametrize("rule", ["FREQ=MONTHLY;BYDAY=5FR", "FREQ=YEARLY;BYDAY=-53SU", "FREQ=YEARLY;BYDAY=20MO",
                                  "FREQ=MONTHLY;BYMONTHDAY=-31", "FREQ=YEARLY;BYYEARDAY=366",
                                  "FREQ=SECONDLY;INTERVAL=31622400", "FREQ=MINUTELY;BYSECOND=59"])
def test_the_edges_of_each_range_are_taken(client, rule: str) -> None:
    previewed = client.post("/api/v1/schedules/preview/", json={"rrule": rule})
    assert previewed.status_code == 200, previewed.json

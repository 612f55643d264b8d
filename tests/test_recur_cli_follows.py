"""A schedule's `after` through the `recur` CLI and `recur apply`, against real processes (gunicorn serving
the API): --follow on create and edit, a file whose followers name their upstreams by key (applied upstream
first, unchanged on a second apply), and a cycle refused naming `after`."""

from __future__ import annotations

import pytest
import yaml

from harness.recur_cli_runner import recur

pytestmark = pytest.mark.integration


def test_follow_through_the_cli_and_apply(stack, tmp_path):  # type: ignore[no-untyped-def]
    url, token = stack.api.base, stack.api.token

    def run(*args: str, ok: bool = True):  # type: ignore[no-untyped-def]
        return recur(url, token, *args, ok=ok)

    flow = run("workflows", "create", "steps", "builtin.noop", "--json").json()["id"]
    a = run("schedules", "create", "--name", "a", "--key", "a", "--workflow", str(flow), "--every", "1h",
            "--json").json()
    b = run("schedules", "create", "--name", "b", "--key", "b", "--workflow", str(flow), "--every", "1d",
            "--follow", "a", "--follow-on", "ended", "--follow-delay", "30", "--json").json()
    assert b["after"] == {"schedule_id": a["id"], "on": "ended", "delay_seconds": 30, "within": None}
    refused = run("schedules", "edit", a["id"], "--follow", "b", ok=False)
    assert refused.code != 0 and "after" in refused.err and "cycle" in refused.err, refused
    lonely = run("schedules", "edit", b["id"], "--follow-on", "failed", ok=False)
    assert lonely.code != 0 and "--follow" in lonely.err
    assert run("schedules", "edit", b["id"], "--follow", "none", "--json").json()["after"] is None

    path = tmp_path / "recur.yaml"
    path.write_text(yaml.safe_dump({"workflows": [{"name": "steps", "task": "builtin.noop"}], "schedules": [
        {"key": "d", "name": "d", "workflow": "steps", "every": "1d", "after": {"schedule": "c", "delay_seconds": 5}},
        {"key": "c", "name": "c", "workflow": "steps", "every": "1d", "after": {"schedule": "a"}},
    ]}, sort_keys=False))
    first = run("apply", str(path)).out
    assert first.splitlines()[-1] == "2 created, 0 updated, 0 deleted, 0 unchanged", first
    listed = {s["key"]: s for s in stack.api.ok("GET", "/api/v1/schedules/?limit=100")["items"]}
    assert listed["c"]["after"]["schedule_id"] == a["id"]
    assert listed["d"]["after"] == {"schedule_id": listed["c"]["id"], "on": "succeeded", "delay_seconds": 5,
                                    "within": None}
    second = run("apply", str(path)).out
    assert second.splitlines()[-1] == "0 created, 0 updated, 0 deleted, 2 unchanged", second

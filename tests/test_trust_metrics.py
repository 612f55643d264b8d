"""What an anonymous scrape of /metrics shows: counts, never a name an owner typed (a workflow is a
`workflow_id` label). Runs go through the real chain in-process (RQ's SimpleWorker on fakeredis)."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from harness.chain_driver import runs_of, step

NAMES = ("zebra-payroll-of-acme-7f3", "quokka-schedule-name-91c")


def test_an_anonymous_scrape_names_no_workflow(app, fake_clock, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.tokens import authorized_client, new_owner_token

    monkeypatch.setitem(app.config, "RECUR_METRICS_TOKEN", None)  # the default: /metrics open
    owner = authorized_client(app, new_owner_token(app, "someone"))
    workflow = owner.post("/api/v1/workflows/", json={"name": NAMES[0], "task": "builtin.fail",
                                                      "breaker_threshold": 5}).json
    schedule = owner.post("/api/v1/schedules/", json={"name": NAMES[1], "workflow_id": workflow["id"],
                                                      "interval_seconds": 60, "max_retries": 0,
                                                      "on_exhausted": "continue"})
    assert schedule.status_code == 201, schedule.json
    for _ in range(2):
        assert step(app, fake_clock) is not None
    assert [r.status for r in runs_of(schedule.json["id"])] == ["failed", "failed"]

    scrape = app.test_client().get("/metrics")
    assert scrape.status_code == 200
    text = scrape.get_data(as_text=True)
    for name in NAMES:
        assert name not in text
    samples = [s for family in text_string_to_metric_families(text) for s in family.samples]
    breaker = {s.labels["state"]: s.value for s in samples if s.name == "recur_breaker_state"
               and s.labels.get("workflow_id") == str(workflow["id"])}
    assert breaker == {"closed": 1, "open": 0, "half_open": 0}
    assert any(s.name == "recur_runs_total" and s.labels == {"status": "failed", "trigger": "schedule"}
               and s.value >= 2 for s in samples)
    owner_typed = {"workflow", "name", "schedule", "owner"}
    assert not [s for s in samples if owner_typed & set(s.labels)]

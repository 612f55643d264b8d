"""GET /metrics with real processes: two gunicorn web workers and two Recur workers share a multiprocess
directory, and the counters every process keeps add up to what the run table says."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from harness.servers import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.web_workers(2)]  # two gunicorn web processes share the metrics

TOKEN = "metrics-secret-for-the-test"


@pytest.fixture
def stack_env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "metrics").mkdir()
    return {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"),  # every process the stack starts
            "RECUR_METRICS_TOKEN": TOKEN, "RECUR_LOG_FORMAT": "json"}


def _scrape(base: str, token: str | None = TOKEN) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(base + "/metrics", headers=headers), timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_counters_match_the_run_table_across_processes(stack):
    _counters_match_the_run_table(stack)


def test_the_procfiles_processes_as_written_count_in_one_place_per_host(tmp_path, redis_server, database_url,
                                                                         monkeypatch):
    """No metrics setting at all: gunicorn and worker.py, run from a checkout as the Procfile says, keep
    their metrics in the checkout's instance/metrics, and a scrape of the web adds up the workers' counts."""
    from harness.checkout import copy_of_the_checkout
    from harness.stack import Stack

    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    monkeypatch.setenv("RECUR_METRICS_TOKEN", TOKEN)  # every process of the stack
    checkout = copy_of_the_checkout(tmp_path / "checkout")
    stack = Stack(tmp_path, redis_server, database_url, cwd=checkout, web_workers=2)  # the Procfile's two
    try:
        _counters_match_the_run_table(stack)
    finally:
        stack.stop()
    assert any(p.name.startswith("counter_") for p in (checkout / "instance" / "metrics").iterdir())


def _counters_match_the_run_table(stack) -> None:  # type: ignore[no-untyped-def]
    api = stack.api
    for _ in range(2):
        stack.start_worker(slots=2)  # several slots each: the live-worker count is of processes, not slots
    made = {}
    for task, fields in (
        ("builtin.noop", {"total_repeats": 8}),
        ("builtin.fail", {"total_repeats": 2, "max_retries": 1}),  # dies after its first tick's two attempts
        ("builtin.flaky", {"total_repeats": 2, "max_retries": 1, "trigger_payload": {"failures": 1}}),
        ("builtin.sleep", {"total_repeats": 1, "max_retries": 0, "timeout_seconds": 1,
                           "trigger_payload": {"seconds": 5}}),
    ):
        workflow = api.ok("POST", "/api/v1/workflows/", {"name": task, "task": task})
        made[task] = api.ok("POST", "/api/v1/schedules/", {
            "name": task, "workflow_id": workflow["id"], "interval_seconds": 1, **fields})["id"]

    def settled() -> bool:
        return all(api.ok("GET", f"/api/v1/schedules/{i}/")["status"] in ("done", "dead") for i in made.values())

    wait_for(settled, 60, interval=0.2, what="every schedule to finish")
    rows = [r for i in made.values() for r in api.runs(i)]
    runs = [r for r in rows if r["reason"] is None]  # not the rows that record ticks not run (see below)
    gaps = Counter((r["status"], r["reason"]) for r in rows for _ in range(r["ticks"] or 0) if r["reason"])
    by_status = Counter(r["status"] for r in runs)
    assert set(by_status) == {"succeeded", "failed", "timed_out"}, by_status
    assert len({r["worker"].rsplit("-", 1)[0] for r in runs}) == 2  # both workers ran some (on any of their slots)

    assert _scrape(api.base, None)[0] == 401
    assert _scrape(api.base, "wrong")[0] == 401
    # Each scrape is answered by either gunicorn worker; every answer adds up every process's files.
    for _ in range(4):
        status, text = _scrape(api.base)
        assert status == 200
        samples = _samples(text)
        counted: Counter[str] = Counter()
        for (name, labels), value in samples.items():
            if name == "recur_runs_total":
                counted[dict(labels)["status"]] += int(value)
        assert counted == by_status
        by_trigger = Counter((r["status"], r["trigger"]) for r in runs)
        assert {tuple(dict(labels)[k] for k in ("status", "trigger")): value for (name, labels), value
                in samples.items() if name == "recur_runs_total"} == by_trigger  # retries are `retry`
        durations = {dict(labels)["status"]: value for (name, labels), value in samples.items()
                     if name == "recur_run_duration_seconds_count"}
        assert durations == by_status
        assert samples[("recur_run_lateness_seconds_count", ())] == len(runs)
        not_run = {(dict(labels)["status"], dict(labels)["reason"]): value for (name, labels), value in samples.items()
                   if name == "recur_ticks_not_run_total"}
        assert not_run == gaps  # ticks that came due during the retries and the 5 s sleep: skipped, overlap
        assert samples[("recur_schedules", (("status", "done"),))] == 2  # noop, flaky
        assert samples[("recur_schedules", (("status", "dead"),))] == 2  # fail, sleep (timed out)
        assert samples[("recur_schedules", (("status", "active"),))] == 0
        # two worker.py processes, each of several slots: two live workers, not their RQ registrations
        assert samples[("recur_workers", ())] == 2 and samples[("recur_workers_alive", (("queue", "recur"),))] == 2
        assert samples[("recur_queue_without_worker", (("queue", "recur"),))] == 0
        assert ("recur_queue_depth", (("queue", "recur"),)) in samples
        assert samples[("recur_reconcile_pass_seconds_count", ())] >= 1
        assert not any("schedule_id" in dict(labels) or "id" in dict(labels) for _, labels in samples)


def _json_lines(path: Path) -> list[dict]:  # type: ignore[type-arg]
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    assert lines
    return [json.loads(line) for line in lines]  # every line: one JSON object


def test_json_logs_name_the_link(stack, tmp_path):
    """RECUR_LOG_FORMAT=json (set for the stack): the workers log JSON lines, and each run's lines carry its
    schedule id, run id, repeat, retry and worker."""
    api = stack.api
    stack.start_worker()
    workflow = api.ok("POST", "/api/v1/workflows/", {"name": "fail", "task": "builtin.flaky"})
    schedule = api.ok("POST", "/api/v1/schedules/", {"name": "f", "workflow_id": workflow["id"], "interval_seconds": 1,
                                                     "total_repeats": 1, "trigger_payload": {"failures": 1}})
    wait_for(lambda: api.ok("GET", f"/api/v1/schedules/{schedule['id']}/")["status"] == "done", 30,
             what="the schedule to finish")
    stack.stop()
    entries = _json_lines(tmp_path / "worker0.log")
    about = [e for e in entries if e.get("schedule_id") == schedule["id"]]
    assert {(e["repeat"], e["retry"]) for e in about if e["message"].startswith("run ")} == {(0, 0), (0, 1)}
    assert all(e["worker"] and e["run_id"] for e in about if e["message"].startswith("run "))
    assert {e["level"] for e in entries} <= {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}


def test_a_missing_multiprocess_directory_is_made_not_a_crash(tmp_path):
    import subprocess
    import sys

    from harness.servers import ROOT

    where = tmp_path / "not" / "there"
    count = "import recur_server.metrics as m; m.RUNS.labels('succeeded', 'schedule').inc()"
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(where)}
    done = subprocess.run([sys.executable, "-c", count], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert any(p.name.startswith("counter_") for p in where.iterdir())


def test_a_worker_serves_its_hosts_counters_on_its_own_port(stack):
    """A host with no web process: RECUR_METRICS_PORT makes worker.py serve the host's counters; a second
    worker of the host finds the port taken and goes on without it."""
    from harness.servers import free_port

    port = free_port()
    stack.env["RECUR_METRICS_PORT"] = str(port)
    first, second = stack.start_worker(), stack.start_worker()
    stack.wait_workers_ready()

    def served() -> dict:  # type: ignore[type-arg]
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
                samples = _samples(answer.read().decode())
        except OSError:
            return {}
        return samples if samples.get(("recur_reconcile_pass_seconds_count", ()), 0) >= 1 else {}

    samples = wait_for(served, 30, interval=0.5, what="the worker's port to show a reconciler pass")
    assert not any(name == "recur_schedules" for name, _ in samples)  # the counters only: state is the web's
    assert first.alive() and second.alive()

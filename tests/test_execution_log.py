"""The execution log (RECUR_EXECUTION_LOG): one line per task body start, written outside the database and
Redis; and the chaos run's reading of it, which tells a retry that at-least-once allows from a body that
ran twice when it must not have."""

from __future__ import annotations

from bench.executions import classify, parse
from harness.chain_driver import make_schedule, runs_of, step


def _two_flaky_ticks(chain_app, fake_clock, log_path):  # type: ignore[no-untyped-def]
    """Two ticks of a task that fails once each: four attempts, two of them successes."""
    chain_app.config["RECUR_EXECUTION_LOG"] = str(log_path)
    schedule = make_schedule(fake_clock.now, task="builtin.flaky", interval_seconds=10, total_repeats=2,
                             trigger_payload={"failures": 1})
    for _ in range(4):
        step(chain_app, fake_clock)
    return schedule


def test_every_body_start_appends_one_line(chain_app, fake_clock, tmp_path):
    log_path = tmp_path / "executions.log"
    schedule = _two_flaky_ticks(chain_app, fake_clock, log_path)

    starts = parse(log_path.read_text().splitlines())
    runs = [r for r in runs_of(schedule.id) if r.reason is None]  # not the row of the ticks skipped meanwhile
    assert [(s.schedule_id, s.repeat, s.retry, s.scheduled_for) for s in starts] == [
        (r.schedule_id, r.repeat_number, r.retry_number, r.scheduled_for) for r in runs]
    assert len(starts) == 4 and all(s.pid > 0 for s in starts)
    report = classify(starts, {(r.schedule_id, r.repeat_number, r.retry_number): (r.status, r.error) for r in runs})
    assert report["ticks_started_more_than_once"] == 2 and report["retried_after_task_failure"] == 2
    assert (report["restarted_after_write_off"], report["unexplained"]) == (0, 0)


A, B = "aaaaaaaa-0000-0000-0000-000000000000", "bbbbbbbb-0000-0000-0000-000000000000"
T = "2026-03-02T12:00:10+00:00"
LOST = "worker_lost: its worker stopped renewing the lease"


def _lines(*attempts: tuple[str, int, int]) -> list[str]:
    return [f"{sid} {repeat} {retry} {T} 4242" for sid, repeat, retry in attempts]


def test_classify_tells_intended_retries_and_write_offs_from_bodies_that_ran_twice():
    runs = {
        (A, 0, 0): ("succeeded", None),
        (A, 1, 0): ("failed", "RuntimeError: boom"),  # the task raised: its retry is intended
        (A, 1, 1): ("timed_out", "timed out after 1s"),
        (A, 1, 2): ("succeeded", None),
        (A, 2, 0): ("failed", LOST),  # written off although its body started: (a)
        (A, 2, 1): ("succeeded", None),
        (B, 0, 0): ("failed", "work process died by signal 9 (SIGKILL)"),  # written off before its body
        (B, 0, 1): ("succeeded", None),
        (B, 1, 0): ("running", None),
    }
    starts = parse(_lines((A, 0, 0), (A, 1, 0), (A, 1, 1), (A, 1, 2), (A, 2, 0), (A, 2, 1), (B, 0, 1), (B, 1, 0)))
    report = classify(starts, runs)
    assert report["body_starts"] == 8 and report["ticks_started"] == 5
    assert report["ticks_started_more_than_once"] == 2
    assert report["retried_after_task_failure"] == 1
    assert report["restarted_after_write_off"] == 1
    assert report["written_off_attempts"] == 2 and report["written_off_after_body_start"] == 1
    assert report["unexplained"] == 0 and report["runs_without_a_logged_start"] == 0


def test_classify_counts_every_body_that_ran_when_it_must_not_have():
    runs = {
        (A, 0, 0): ("succeeded", None),
        (A, 1, 0): ("succeeded", None),
        (A, 1, 1): ("failed", LOST),  # an attempt claimed after its tick succeeded (the fence failed)
        (A, 2, 0): ("skipped", "overlap: run x still running"),
        (B, 0, 0): ("failed", "RuntimeError: boom"),
    }
    starts = parse(_lines(
        (A, 0, 0), (A, 0, 0),  # one attempt's body started twice
        (A, 1, 0), (A, 1, 1),  # a start after its tick succeeded
        (A, 2, 0),  # the body of a skipped run
        (B, 3, 0),  # a start with no claimed run
    ))
    report = classify(starts, runs)
    assert report["unexplained"] == 4
    assert sorted(report["examples"]["unexplained"]) == sorted([
        f"{A} n0: attempt rc0 started 2 times",
        f"{A} n1: rc1 started after rc0 succeeded",
        f"{A} n2: rc0 started but its run was skipped",
        f"{B} n3: rc0 started with no claimed run",
    ])
    # A run that ended by its task's own outcome but has no start line: the log missed it.
    assert report["runs_without_a_logged_start"] == 1  # (B, 0, 0)


def test_every_success_appends_a_line_to_the_ok_log_and_matches_the_runs_table(chain_app, fake_clock, tmp_path):
    from bench.executions import successes_recorded_otherwise

    schedule = _two_flaky_ticks(chain_app, fake_clock, tmp_path / "executions.log")
    successes = parse((tmp_path / "executions.log.ok").read_text().splitlines())
    runs = {(r.schedule_id, r.repeat_number, r.retry_number): (r.status, r.error) for r in runs_of(schedule.id)}
    assert sorted((s.repeat, s.retry) for s in successes) == [(0, 1), (1, 1)]
    assert successes_recorded_otherwise(successes, runs, set())["recorded_otherwise"] == 0


def test_a_success_recorded_as_a_failure_is_counted_unless_its_process_was_killed():
    from bench.executions import successes_recorded_otherwise

    successes = parse([f"{A} 0 0 {T} 11", f"{B} 0 0 {T} 22", f"{B} 1 0 {T} 22"])
    runs = {(A, 0, 0): ("failed", LOST), (B, 0, 0): ("failed", LOST), (B, 1, 0): ("succeeded", None)}
    report = successes_recorded_otherwise(successes, runs, killed_pids={22})
    assert (report["succeeded_bodies"], report["recorded_otherwise_after_kill"], report["recorded_otherwise"]) == (
        3, 1, 1)
    assert report["examples"] == [f"{A} n0 rc0: failed {LOST}"]

"""When runs and time collide, end to end: gunicorn, worker.py processes and a real redis-server, every
policy driven through HTTP and read back from the run history and the task bodies that really started
(RECUR_EXECUTION_LOG)."""

from __future__ import annotations

import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from harness.servers import wait_for
from harness.stack import Stack, parse_instant
from recur_server.infra import clock

pytestmark = pytest.mark.integration

# Periods the tests below let pass on purpose, to see what happens over them (not waits for something):
OUTAGE_SECONDS = 5 * 2 + 0.5  # every worker down for five intervals of the 2 s schedules
OVERLAP_OBSERVED_SECONDS = 11.0  # a 3 s task on a 1 s schedule: eleven ticks, three or four runs of it
NO_THIRD_RUN_SECONDS = 2.0  # after the two manual runs of two keys, no third for the repeated key


def _t(instant: str | None) -> datetime | None:
    return None if instant is None else parse_instant(instant)


def _executions(log: Path) -> Counter[tuple[str, str]]:
    """(schedule_id, scheduled_for) of every task body that started."""
    if not log.exists():
        return Counter()
    return Counter((line.split()[0], line.split()[3]) for line in log.read_text().splitlines())


def _with_log(stack: Stack) -> Path:
    log = stack.tmp_path / "executions.log"
    stack.env["RECUR_EXECUTION_LOG"] = str(log)
    return log


def _workflow(stack: Stack, task: str = "builtin.noop", **fields: Any) -> int:
    return int(stack.api.ok("POST", "/api/v1/workflows/", {"name": task, "task": task, **fields})["id"])


def _schedule(stack: Stack, workflow_id: int, name: str, **fields: Any) -> str:
    return str(stack.api.ok("POST", "/api/v1/schedules/", {"name": name, "workflow_id": workflow_id, **fields})["id"])


def _history(stack: Stack, schedule_id: str) -> list[dict[str, Any]]:
    """Oldest first, as the timelines in the README read."""
    return sorted(stack.api.runs(schedule_id), key=lambda r: (r["scheduled_for"], r["started_at"]))


def _timeline(runs: list[dict[str, Any]]) -> str:
    def at(instant: str | None) -> str:
        return _t(instant).strftime("%H:%M:%S.%f")[:-3] if instant else "-"

    return "\n".join(f"  {at(r['scheduled_for'])} {r['status']:>9} {r['trigger']:>8} started {at(r['started_at'])} "
                     f"ended {at(r['finished_at'])} {r['reason'] or ''} {r['ticks'] or ''}" for r in runs)


# --- catch-up -----------------------------------------------------------------------------------------

def test_catch_up_after_every_worker_was_down_for_five_intervals(stack: Stack) -> None:
    log = _with_log(stack)
    worker = stack.start_worker()
    workflow = _workflow(stack)
    ids = {
        "skip": _schedule(stack, workflow, "skip", interval_seconds=2, catch_up="skip"),
        "latest": _schedule(stack, workflow, "latest", interval_seconds=2, catch_up="latest"),
        "all": _schedule(stack, workflow, "all", interval_seconds=2, catch_up="all"),
        "window": _schedule(stack, workflow, "window", interval_seconds=2, catch_up="all", catch_up_window_seconds=5),
    }
    wait_for(lambda: all(any(r["status"] == "succeeded" for r in stack.api.runs(i)) for i in ids.values()), 20,
             what="every schedule to run once")
    worker.stop()  # SIGTERM: the worker finishes what it runs and leaves; nothing runs the links now
    last = {policy: max(_t(r["scheduled_for"]) for r in stack.api.runs(i)) for policy, i in ids.items()}
    time.sleep(OUTAGE_SECONDS)
    restarted = datetime.now(UTC)
    stack.start_worker()

    def back_on_time(schedule_id: str) -> bool:
        return any(r["trigger"] == "schedule" and _t(r["scheduled_for"]) > restarted
                   for r in stack.api.runs(schedule_id))

    wait_for(lambda: all(back_on_time(i) for i in ids.values()), 30, what="every schedule back on its grid")
    after = {policy: [r for r in _history(stack, i) if _t(r["scheduled_for"]) > last[policy]]
             for policy, i in ids.items()}
    for policy, runs in after.items():
        print(f"catch_up={policy}, after the outage:\n{_timeline(runs)}")

    def caught_up(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [r for r in runs if r["trigger"] == "catch_up" and r["status"] != "missed"]

    def missed(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [r for r in runs if r["status"] == "missed"]

    def last_of(gap: dict[str, Any]) -> datetime:
        return _t(gap["scheduled_for"]) + timedelta(seconds=2 * (gap["ticks"] - 1))

    # skip: every missed tick is one missed row; the first run is the first tick after the restart
    [gap] = missed(after["skip"])
    assert gap["reason"] == "catch_up_skip" and gap["ticks"] >= 5 and not caught_up(after["skip"])
    first_run = next(r for r in after["skip"] if r["status"] != "missed")
    assert first_run["trigger"] == "schedule" and _t(first_run["scheduled_for"]) > last_of(gap)

    # latest: exactly one run, for the most recent missed tick; the ones before it are one missed row
    [gap] = missed(after["latest"])
    [caught] = caught_up(after["latest"])
    assert gap["reason"] == "catch_up_skip" and gap["ticks"] >= 4 and caught["status"] == "succeeded"
    assert _t(caught["scheduled_for"]) == last_of(gap) + timedelta(seconds=2)
    assert _t(caught["started_at"]) - _t(caught["scheduled_for"]) < timedelta(seconds=2)  # it was the latest

    # all: every missed tick runs, oldest first, each with its own nominal time
    runs = caught_up(after["all"])
    assert len(runs) >= 5 and not missed(after["all"])
    nominal = [_t(r["scheduled_for"]) for r in runs]
    assert nominal[0] == last["all"] + timedelta(seconds=2)
    assert all(b - a == timedelta(seconds=2) for a, b in zip(nominal, nominal[1:], strict=False)), nominal
    started = [_t(r["started_at"]) for r in runs]
    assert started == sorted(started) and all(r["status"] == "succeeded" for r in runs)

    # a window shorter than the outage: the ticks older than it are missed, only those inside it run. (Each run
    # caught up started within the window of its own tick: that is the rule. How many there are is not: on a
    # loaded machine a worker that starts slowly, or a tick after the restart that starts late, adds some.)
    [gap] = missed(after["window"])
    runs = caught_up(after["window"])
    assert gap["reason"] == "catch_up_window" and gap["ticks"] >= 2
    assert runs and _t(runs[0]["scheduled_for"]) > last_of(gap)
    assert _t(runs[0]["started_at"]) - last_of(gap) > timedelta(seconds=5)  # the missed were past the window
    assert all(_t(r["started_at"]) - _t(r["scheduled_for"]) <= timedelta(seconds=5) for r in runs)

    bodies = _executions(log)
    assert max(bodies.values()) == 1, [k for k, n in bodies.items() if n > 1]  # no tick's body ran twice


# --- overlap ------------------------------------------------------------------------------------------

# Workers and slots each: room for a run to overlap another where the policy must prevent it (two slots),
# a tick to start on time on another worker beside the run it cancels, and three-second runs every second
# to overlap (three at once, and one as the oldest ends).
WORKERS_FOR = {"skip": (1, 2), "buffer_one": (1, 2), "buffer_all": (1, 2), "cancel_other": (2, 1),
               "allow_all": (2, 3)}


@pytest.mark.parametrize("policy", list(WORKERS_FOR))
def test_a_three_second_task_on_a_one_second_schedule(stack: Stack, policy: str) -> None:
    log = _with_log(stack)
    workers, slots = WORKERS_FOR[policy]
    for _ in range(workers):
        stack.start_worker(slots=slots)
    stack.wait_workers_ready()
    workflow = _workflow(stack, "builtin.sleep")
    schedule_id = _schedule(stack, workflow, policy, interval_seconds=1, overlap=policy,
                            trigger_payload={"seconds": 3}, max_retries=0, on_exhausted="continue")
    time.sleep(OVERLAP_OBSERVED_SECONDS)
    stack.api.ok("POST", f"/api/v1/schedules/{schedule_id}/pause/", {"note": "end of the test"})
    runs = _history(stack, schedule_id)
    print(f"overlap={policy}:\n{_timeline(runs)}")
    taken = [r for r in runs if r["status"] not in ("skipped", "missed")]
    skipped = [r for r in runs if r["status"] == "skipped"]
    ended = [r for r in taken if r["finished_at"]]
    spans = [(_t(r["started_at"]), _t(r["finished_at"])) for r in ended]
    most_at_once = max(sum(1 for s, e in spans if s <= start < e) for start, _ in spans)
    lateness = [(_t(r["started_at"]) - _t(r["scheduled_for"])).total_seconds() for r in taken]
    assert len({r["scheduled_for"] for r in taken}) == len(taken)  # no tick taken twice
    bodies = _executions(log)
    assert bodies and max(bodies.values()) == 1  # no tick's body ran twice

    if policy == "skip":
        assert most_at_once == 1 and skipped and all(r["reason"] == "overlap" for r in skipped)
        assert all(r["status"] == "succeeded" for r in ended)
        # each skipped row stands for the ticks that came due during the run before it
        assert sum(r["ticks"] for r in skipped) >= 2 * (len(ended) - 1)
    elif policy == "buffer_one":
        assert most_at_once == 1 and all(r["status"] == "succeeded" for r in ended)
        for before, after in zip(ended, ended[1:], strict=False):  # the next starts as the previous ends,
            assert (_t(after["started_at"]) - _t(before["finished_at"])).total_seconds() < 1.0
            # with the most recent tick that came due meanwhile
            finished = _t(before["finished_at"])
            assert finished - timedelta(seconds=1) <= _t(after["scheduled_for"]) <= finished
        assert skipped and all(r["reason"] == "overlap" for r in skipped)
    elif policy == "buffer_all":
        assert most_at_once == 1 and not skipped and all(r["status"] == "succeeded" for r in ended)
        nominal = [_t(r["scheduled_for"]) for r in taken]
        assert all(b - a == timedelta(seconds=1) for a, b in zip(nominal, nominal[1:], strict=False))  # every tick
        assert lateness == sorted(lateness) and lateness[-1] > 4  # in order, later and later
    elif policy == "cancel_other":
        cancelled = [r for r in taken if r["status"] == "cancelled"]
        assert len(cancelled) >= 5 and max(lateness) < 1.0  # every tick started on time
        for run in cancelled:  # each stopped when the next tick started, about a second in
            assert (_t(run["finished_at"]) - _t(run["started_at"])).total_seconds() < 2.0
            assert run["error"].startswith("cancelled: the tick of")
    else:  # allow_all
        assert most_at_once >= 3 and max(lateness) < 1.0 and not skipped
        assert all(r["status"] == "succeeded" for r in ended) and len(ended) >= 6


# --- runs outside the chain ---------------------------------------------------------------------------

def test_trigger_twice_with_one_idempotency_key_starts_one_run(stack: Stack) -> None:
    log = _with_log(stack)
    stack.start_worker()
    stack.wait_workers_ready()  # on a loaded machine a worker takes seconds to start
    workflow = _workflow(stack)
    # Its one daily tick is twelve hours away, so it cannot come due between the create and the pause. Its two
    # runs may overlap (a worker's slots take both at once): allow_all, so that neither is skipped for it.
    schedule_id = _schedule(stack, workflow, "daily", cron=f"0 {(datetime.now(UTC).hour + 12) % 24} * * *",
                            overlap="allow_all")
    stack.api.ok("POST", f"/api/v1/schedules/{schedule_id}/pause/")  # a paused schedule can be triggered
    path = f"/api/v1/schedules/{schedule_id}/trigger/"
    first = stack.api.call("POST", path, headers={"Idempotency-Key": "deploy-42"})
    second = stack.api.call("POST", path, headers={"Idempotency-Key": "deploy-42"})
    assert first[0] == second[0] == 202 and first[1] == second[1]
    other = stack.api.call("POST", path, headers={"Idempotency-Key": "deploy-43"})
    assert other[0] == 202 and other[1]["run_id"] != first[1]["run_id"]

    def manual_runs() -> list[dict[str, Any]]:
        return [r for r in stack.api.runs(schedule_id) if r["trigger"] == "manual" and r["status"] == "succeeded"]

    wait_for(lambda: len(manual_runs()) == 2, 30, what="two manual runs")
    time.sleep(NO_THIRD_RUN_SECONDS)
    assert sorted(r["id"] for r in manual_runs()) == sorted([first[1]["run_id"], other[1]["run_id"]])
    assert sum(n for (sid, _), n in _executions(log).items() if sid == schedule_id) == 2
    detail = stack.api.ok("GET", f"/api/v1/schedules/{schedule_id}/")
    assert (detail["run_count"], detail["status"], detail["stats"]["runs_by_trigger"]) == (0, "paused", {"manual": 2})


def test_backfill_of_a_past_hour_of_a_ten_minute_cron(stack: Stack) -> None:
    log = _with_log(stack)
    stack.start_worker(slots=2)  # room for two of its runs at once, which the backfill must not take
    workflow = _workflow(stack)
    schedule_id = _schedule(stack, workflow, "ten", cron="*/10 * * * *")
    hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(hours=2)
    body = {"start": hour.isoformat(), "end": (hour + timedelta(hours=1)).isoformat()}
    expected = [(hour + timedelta(minutes=10 * i)).isoformat().replace("+00:00", "Z") for i in range(6)]
    status, plan = stack.api.call("POST", f"/api/v1/schedules/{schedule_id}/backfill/", {**body, "dry_run": True})
    assert status == 200 and plan["times"] == expected and plan["total"] == 6
    assert [r for r in stack.api.runs(schedule_id) if r["trigger"] == "backfill"] == []  # the dry run ran nothing
    status, backfill = stack.api.call("POST", f"/api/v1/schedules/{schedule_id}/backfill/", body)
    assert status == 202 and backfill["total"] == 6

    def done() -> bool:
        [progress] = stack.api.ok("GET", f"/api/v1/schedules/{schedule_id}/backfills/")["items"]
        return progress["status"] == "done" and progress["done"] == 6

    wait_for(done, 30, what="the backfill to finish")
    runs = sorted((r for r in stack.api.runs(schedule_id) if r["trigger"] == "backfill"), key=lambda r: r["started_at"])
    print("backfill:\n" + _timeline(runs))
    assert [r["scheduled_for"] for r in runs] == expected  # in order, each with its own nominal time
    assert all(r["status"] == "succeeded" for r in runs)
    spans = [(_t(r["started_at"]), _t(r["finished_at"])) for r in runs]
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))  # one at a time
    # Each backfilled tick's body ran once. (The schedule's own chain may also have run a tick meanwhile:
    # created a second before a ten-minute mark, its first tick comes due during the test.)
    bodies = _executions(log)
    assert [bodies[(schedule_id, (hour + timedelta(minutes=10 * i)).isoformat())] for i in range(6)] == [1] * 6
    too_long = stack.api.call("POST", f"/api/v1/schedules/{schedule_id}/backfill/",
                     {"start": hour.isoformat(), "end": (hour + timedelta(days=8)).isoformat()})
    assert too_long[0] == 422 and "end" in too_long[1]["errors"]


def test_a_workflow_with_two_slots_never_runs_more_than_two(stack: Stack) -> None:
    log = _with_log(stack)
    for _ in range(4):  # enough workers to run four at once without the limit
        stack.start_worker()  # one slot each
    stack.wait_workers_ready()
    workflow = _workflow(stack, "builtin.sleep", max_concurrent_runs=2)
    at = (datetime.now(UTC) + timedelta(seconds=4)).replace(microsecond=0)
    ids = [_schedule(stack, workflow, f"s{i}", at=at.isoformat(), trigger_payload={"seconds": 2}) for i in range(10)]
    wait_for(lambda: all(stack.api.ok("GET", f"/api/v1/schedules/{i}/")["status"] == "done" for i in ids), 40,
             what="ten runs")
    runs = [r for i in ids for r in stack.api.runs(i) if r["status"] == "succeeded"]
    print("max_concurrent_runs=2:\n" + _timeline(sorted(runs, key=lambda r: r["started_at"])))
    assert len(runs) == 10
    spans = [(_t(r["started_at"]), _t(r["finished_at"])) for r in runs]
    # Each span is stamped on its own process's cluster clock, each within half a Redis round trip of Redis's
    # TIME (recur_server.infra.clock): a run that took the slot of one ending on another process may look as
    # if it began up to one such round trip before that one ended (CI saw 3 "at once", under 1 ms apart).
    agree = timedelta(seconds=clock.GOOD_ROUND_TRIP_SECONDS)
    assert max(sum(1 for s, e in spans if s <= start < e - agree) for start, _ in spans) == 2
    starts = sorted(s for s, _ in spans)
    assert (starts[-1] - at).total_seconds() >= 7  # the last waited for a slot, visibly late
    assert max(_executions(log).values()) == 1

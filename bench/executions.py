"""How often task bodies really started, from the execution log (RECUR_EXECUTION_LOG), against the runs table.

The runs table proves one claim per attempt (a unique index makes a second one impossible), not how often
a body ran. The log is written by the task runner itself, outside the database and Redis, as each body
starts. A tick whose body started more than once is one of:

- a retry after an ordinary failure (the task raised or timed out): intended, counted apart;
- (a) a retry after an attempt that was written off (its worker died, or its lease lapsed) although its
  body had started: at-least-once, inherent to any queue. Bounded: one extra start per written-off
  attempt whose body started, and attempts are written off only when a worker dies or a lease lapses;
- (b) anything else: one attempt started twice, a start with no claimed run or for a skipped run, a start
  after its tick succeeded. Must be 0.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

# Outcomes written by someone other than the task runner: the reconciler (a lapsed lease) or the forking
# worker (its work horse died). The attempt's body may have run to the end, or not at all.
WRITE_OFF_PREFIXES = ("worker_lost", "work process")
# The reconciler's write-off of a run past its timeout whose lease lapsed: its worker may be gone too.
LAPSED_PAST_DEADLINE = "its lease lapsed"

Attempt = tuple[str, int, int]  # (schedule id, repeat, retry)
Outcome = tuple[str, str | None]  # (run status, error)


@dataclass(frozen=True)
class Start:
    schedule_id: str
    repeat: int
    retry: int
    scheduled_for: datetime
    pid: int


def parse(lines: Iterable[str]) -> list[Start]:
    """Lines `schedule_id repeat retry scheduled_for pid`, as recur_server.tasks.execution_log writes them."""
    starts = []
    for line in lines:
        if line.strip():
            schedule_id, repeat, retry, scheduled_for, pid = line.split()
            starts.append(Start(schedule_id, int(repeat), int(retry), datetime.fromisoformat(scheduled_for), int(pid)))
    return starts


def written_off(outcome: Outcome) -> bool:
    status, error = outcome
    error = error or ""
    return (status == "failed" and error.startswith(WRITE_OFF_PREFIXES)) or (
        status == "timed_out" and LAPSED_PAST_DEADLINE in error)


def classify(starts: Iterable[Start], runs: Mapping[Attempt, Outcome]) -> dict[str, Any]:
    """Sort every tick's body starts by the outcome of the attempt before each restart (see the module)."""
    per_attempt = Counter((s.schedule_id, s.repeat, s.retry) for s in starts)
    per_tick: dict[tuple[str, int], list[int]] = defaultdict(list)
    for sid, repeat, retry in sorted(per_attempt):
        per_tick[sid, repeat].append(retry)

    after_failure: set[tuple[str, int]] = set()
    after_write_off: set[tuple[str, int]] = set()
    unexplained_ticks: set[tuple[str, int]] = set()
    unexplained: list[str] = []
    for (sid, repeat), retries in per_tick.items():
        problems = []
        for retry in retries:
            outcome = runs.get((sid, repeat, retry))
            if per_attempt[sid, repeat, retry] > 1:
                problems.append(f"attempt rc{retry} started {per_attempt[sid, repeat, retry]} times")
            if outcome is None:
                problems.append(f"rc{retry} started with no claimed run")
            elif outcome[0] == "skipped":
                problems.append(f"rc{retry} started but its run was skipped")
            succeeded = [r for r in range(retry) if runs.get((sid, repeat, r), ("",))[0] == "succeeded"]
            if succeeded:
                problems.append(f"rc{retry} started after rc{succeeded[0]} succeeded")
        for before in retries[:-1]:  # each start after the first: why was the attempt before it retried?
            outcome = runs.get((sid, repeat, before))
            if outcome is None or outcome[0] in ("running", "succeeded", "skipped"):
                continue  # already a problem above (or its run never ended: then rc{retry} cannot exist)
            (after_write_off if written_off(outcome) else after_failure).add((sid, repeat))
        if problems:
            unexplained_ticks.add((sid, repeat))
            unexplained.extend(f"{sid} n{repeat}: {problem}" for problem in problems)
    after_write_off -= unexplained_ticks
    after_failure -= unexplained_ticks | after_write_off

    started = set(per_attempt)
    offs = [attempt for attempt, outcome in runs.items() if written_off(outcome)]
    # An attempt that ended by its task's own outcome ran its body: with no line for it, the log is incomplete.
    unlogged = [attempt for attempt, (status, error) in runs.items()
                if status in ("succeeded", "failed", "timed_out") and not written_off((status, error))
                and attempt not in started]
    return {
        "body_starts": sum(per_attempt.values()),
        "ticks_started": len(per_tick),
        "ticks_started_more_than_once": sum(1 for (sid, repeat), retries in per_tick.items()
                                            if sum(per_attempt[sid, repeat, r] for r in retries) > 1),
        # Each tick in one of the three, in this order of precedence: (b), then (a), then intended.
        "retried_after_task_failure": len(after_failure),
        "restarted_after_write_off": len(after_write_off),
        "written_off_attempts": len(offs),
        "written_off_after_body_start": sum(1 for attempt in offs if attempt in started),
        "unexplained": len(unexplained_ticks),
        "runs_without_a_logged_start": len(unlogged),
        "examples": {"unexplained": unexplained[:10], "unlogged": [" ".join(map(str, a)) for a in unlogged[:5]]},
    }


def successes_recorded_otherwise(successes: Iterable[Start], runs: Mapping[Attempt, Outcome],
                                 killed_pids: set[int]) -> dict[str, Any]:
    """Attempts whose body succeeded (the `.ok` log, written before the outcome is committed) against what
    the runs table recorded for them. A success recorded as anything else is explained only when the
    process that ran it was SIGKILLed before it could commit (a write-off: at-least-once); any other,
    a database or Redis blip turning a success into a failure, must be 0."""
    recorded_otherwise: list[str] = []
    killed = 0
    total = 0
    for start in successes:
        total += 1
        outcome = runs.get((start.schedule_id, start.repeat, start.retry))
        if outcome is not None and outcome[0] == "succeeded":
            continue
        if start.pid in killed_pids and (outcome is None or outcome[0] == "running" or written_off(outcome)):
            killed += 1
            continue
        recorded_otherwise.append(f"{start.schedule_id} n{start.repeat} rc{start.retry}: "
                                  f"{outcome[0] + ' ' + str(outcome[1]) if outcome else 'no run'}")
    return {"succeeded_bodies": total, "recorded_otherwise_after_kill": killed,
            "recorded_otherwise": len(recorded_otherwise), "examples": recorded_otherwise[:10]}

"""The circuit breaker of a workflow, as pure decisions: may a run start, and what does an outcome do.

closed: runs start; `threshold` consecutive failed runs (across the workflow's schedules) open it.
open: runs are not started (their ticks are recorded skipped and the chains go on) until
`reset_seconds` have passed since it opened; then it is half-open and exactly one run, the probe, starts.
half_open: no other run starts; the probe's success closes it, its failure opens it again.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

CLOSED, OPEN, HALF_OPEN = "closed", "open", "half_open"


@dataclass(frozen=True)
class Breaker:
    state: str
    failures: int
    opened_at: datetime | None
    probe_run_id: str | None


@dataclass(frozen=True)
class Transition:
    from_state: str
    to_state: str
    reason: str


def admit(breaker: Breaker, reset_seconds: int, run_id: str, now: datetime) -> tuple[bool, Breaker, Transition | None]:
    """Whether the run may start, the breaker after the decision, and the transition it made (if any)."""
    if breaker.state == CLOSED:
        return True, breaker, None
    if breaker.state == OPEN:
        opened = breaker.opened_at or now
        if (now - opened).total_seconds() >= reset_seconds:
            after = replace(breaker, state=HALF_OPEN, probe_run_id=run_id)
            return True, after, Transition(OPEN, HALF_OPEN, f"{reset_seconds}s since it opened: run {run_id} probes")
        return False, breaker, None
    return False, breaker, None  # half-open: the probe is out


def record(breaker: Breaker, threshold: int, run_id: str, succeeded: bool,
           now: datetime) -> tuple[Breaker, Transition | None]:
    """The breaker after a run of the workflow ended (succeeded, or failed / timed out)."""
    probe = breaker.state == HALF_OPEN and breaker.probe_run_id == run_id
    if succeeded:
        if probe:
            return Breaker(CLOSED, 0, None, None), Transition(HALF_OPEN, CLOSED, f"probe run {run_id} succeeded")
        return replace(breaker, failures=0), None
    failures = breaker.failures + 1
    if probe:
        return (Breaker(OPEN, failures, now, None),
                Transition(HALF_OPEN, OPEN, f"probe run {run_id} failed"))
    if breaker.state == CLOSED and failures >= threshold:
        return (Breaker(OPEN, failures, now, None),
                Transition(CLOSED, OPEN, f"{failures} consecutive failed runs (threshold {threshold})"))
    return replace(breaker, failures=failures), None

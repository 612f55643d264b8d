"""The chain's side of a workflow's circuit breaker (recur_server.policies.breaker): inside a claim's or a finish's
transaction, with the workflow's row locked so that exactly one probe starts across every worker."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, insert, select, update

from recur_server.infra import rawsql
from recur_server.models import BreakerTransition, UTCDateTime, Workflow
from recur_server.notify.events import payload
from recur_server.notify.outbox import EventType, emit
from recur_server.policies import breaker as policy

_WORKFLOWS = Workflow.__table__
_LOAD = rawsql.Statement(
    select(_WORKFLOWS.c.breaker_threshold, _WORKFLOWS.c.breaker_reset_seconds, _WORKFLOWS.c.breaker_state,
           _WORKFLOWS.c.breaker_failures, _WORKFLOWS.c.breaker_opened_at, _WORKFLOWS.c.breaker_probe_run_id,
           _WORKFLOWS.c.owner_id, _WORKFLOWS.c.name)
    .where(_WORKFLOWS.c.id == bindparam("p_id")).with_for_update()
)
_SAVE = rawsql.Statement(
    update(_WORKFLOWS).where(_WORKFLOWS.c.id == bindparam("p_id")).values(
        breaker_state=bindparam("p_state"), breaker_failures=bindparam("p_failures"),
        breaker_opened_at=bindparam("p_opened_at", type_=UTCDateTime()), breaker_probe_run_id=bindparam("p_probe"))
)
_TRANSITION = rawsql.Statement(insert(BreakerTransition.__table__).values(
    workflow_id=bindparam("p_id"), from_state=bindparam("p_from"), to_state=bindparam("p_to"),
    at=bindparam("p_at", type_=UTCDateTime()), reason=bindparam("p_reason"), by=bindparam("p_by")))


def _load(tx: rawsql.Transaction, workflow_id: int) -> tuple[Any, ...] | None:
    row = tx.first(_LOAD, {"p_id": workflow_id})
    return row if row is not None and row[0] is not None else None  # None: no breaker on this workflow


def _save(tx: rawsql.Transaction, workflow_id: int, owner_id: int, name: str, after: policy.Breaker,
          transition: policy.Transition | None, now: datetime, by: str = "system") -> None:
    tx.execute(_SAVE, {"p_id": workflow_id, "p_state": after.state, "p_failures": after.failures,
                       "p_opened_at": after.opened_at, "p_probe": after.probe_run_id})
    if transition is None:
        return
    tx.execute(_TRANSITION, {"p_id": workflow_id, "p_from": transition.from_state, "p_to": transition.to_state,
                             "p_at": now, "p_reason": transition.reason, "p_by": by})
    event = {policy.OPEN: EventType.BREAKER_OPENED, policy.CLOSED: EventType.BREAKER_CLOSED}.get(transition.to_state)
    if event is not None:
        emit(tx, owner_id, event.value, payload(
            event, workflow_id=workflow_id, workflow_name=name, from_=transition.from_state, to=transition.to_state,
            reason=transition.reason, failures=after.failures), now)


def admit(tx: rawsql.Transaction, workflow_id: int, run_id: str, now: datetime) -> str | None:
    """None: the run may start (no breaker, closed, or this run is the probe); else why it may not."""
    row = _load(tx, workflow_id)
    if row is None:
        return None
    _threshold, reset_seconds, state, failures, opened_at, probe, owner_id, name = row
    current = policy.Breaker(state, failures, opened_at, probe)
    allowed, after, transition = policy.admit(current, reset_seconds, run_id, now)
    if after != current:
        _save(tx, workflow_id, owner_id, name, after, transition, now)
    return None if allowed else f"its workflow's circuit breaker is {state}"


def record(tx: rawsql.Transaction, workflow_id: int, run_id: str, succeeded: bool, now: datetime) -> None:
    """A run of the workflow ended (succeeded, failed or timed out)."""
    row = _load(tx, workflow_id)
    if row is None:
        return
    threshold, _reset, state, failures, opened_at, probe, owner_id, name = row
    current = policy.Breaker(state, failures, opened_at, probe)
    after, transition = policy.record(current, threshold, run_id, succeeded, now)
    if after != current:
        _save(tx, workflow_id, owner_id, name, after, transition, now)

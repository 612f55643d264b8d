"""Ticks not run: one run row per gap, missed or skipped, with the policy's reason and how many ticks."""

from __future__ import annotations

import functools
import uuid
from datetime import datetime

from sqlalchemy import bindparam, insert

from recur_server import metrics
from recur_server.infra import rawsql
from recur_server.models import Run, RunStatus, RunTrigger, UTCDateTime
from recur_server.policies import Gap

_RUNS = Run.__table__

_RECORD_GAP = rawsql.Statement(insert(_RUNS).values(
    id=bindparam("p_id"), schedule_id=bindparam("p_schedule_id"), repeat_number=None, retry_number=0,
    scheduled_for=bindparam("p_first", type_=UTCDateTime()), started_at=bindparam("p_now", type_=UTCDateTime()),
    finished_at=bindparam("p_now", type_=UTCDateTime()), status=bindparam("p_status"), error=bindparam("p_error"),
    worker=None, trigger=bindparam("p_trigger"), reason=bindparam("p_reason"), ticks=bindparam("p_ticks"),
))

_STATUS_OF_REASON = {
    "catch_up_skip": RunStatus.MISSED, "catch_up_window": RunStatus.MISSED, "catch_up_limit": RunStatus.MISSED,
    "overlap": RunStatus.SKIPPED, "overlap_limit": RunStatus.SKIPPED, "concurrency": RunStatus.SKIPPED,
    "breaker": RunStatus.SKIPPED,
}


def gap_text(reason: str, gap: Gap) -> str:
    count = f"{gap.count}" if gap.exact else f"at least {gap.count}"
    ticks = "tick" if gap.count == 1 else "ticks"
    span = gap.first.isoformat() if gap.first == gap.last else f"{gap.first.isoformat()} to {gap.last.isoformat()}"
    return f"{reason}: {count} {ticks} not run ({span})"


def record_gaps(tx: rawsql.Transaction, schedule_id: str, gaps: list[tuple[str, Gap]], now: datetime,
                trigger: str = RunTrigger.SCHEDULE.value) -> None:
    """One run row per gap: status missed or skipped, the reason, how many ticks, the first's time."""
    for reason, gap in gaps:
        status = _STATUS_OF_REASON[reason].value
        tx.after_commit.append(functools.partial(metrics.ticks_not_run, status, reason, gap.count))
        tx.execute(_RECORD_GAP, {
            "p_id": str(uuid.uuid4()), "p_schedule_id": schedule_id, "p_first": gap.first, "p_now": now,
            "p_status": status, "p_error": gap_text(reason, gap), "p_trigger": trigger,
            "p_reason": reason, "p_ticks": gap.count,
        })

"""Job identity: one RQ job ID per attempt of one tick (a link), and per start of a run outside the chain."""

from __future__ import annotations

import re

_LINK_ID = re.compile(r"^sched-(?P<schedule>[0-9a-f-]{36})-n(?P<repeat>\d+)-rc(?P<retry>\d+)$")


def link_id(schedule_id: str, repeat: int, retry: int) -> str:
    """The ID of attempt `retry` of tick `repeat`. Also built in Lua by recur_server.chain.redis_links (a
    schedule's head)."""
    return f"sched-{schedule_id}-n{repeat}-rc{retry}"


def parse_link_id(job_id: str) -> tuple[str, int, int] | None:
    match = _LINK_ID.match(job_id)
    if match is None:
        return None
    return match["schedule"], int(match["repeat"]), int(match["retry"])


def outside_job_id(run_id: str, attempt: int) -> str:
    """The ID of start `attempt` of a run outside the chain (a parked run starts again under the next)."""
    return f"recur-run-{run_id}-w{attempt}"

"""Link identity: one RQ job ID per attempt of one tick."""

from __future__ import annotations

import re

_LINK_ID = re.compile(r"^sched-(?P<schedule>[0-9a-f-]{36})-n(?P<repeat>\d+)-rc(?P<retry>\d+)$")


def link_id(schedule_id: str, repeat: int, retry: int) -> str:
    """The ID of attempt `retry` of tick `repeat`. Also built in Lua by app.chain.links (a schedule's head)."""
    return f"sched-{schedule_id}-n{repeat}-rc{retry}"


def parse_link_id(job_id: str) -> tuple[str, int, int] | None:
    match = _LINK_ID.match(job_id)
    if match is None:
        return None
    return match["schedule"], int(match["repeat"]), int(match["retry"])

"""A schedule's `after` in an apply file (docs/follows.md): the upstream named by its key, compared with the
server's `after` (which names the upstream by id), and schedules created and changed upstream first, so a
follower never names a schedule the same apply has not made yet."""

from __future__ import annotations

from typing import Any

DEFAULTS = {"on": "succeeded", "delay_seconds": 0, "within": None}


def after_change(value: Any, current: dict[str, Any], keys_by_id: dict[str, str | None]) -> tuple[Any, Any] | None:
    """(the server's after, the file's) when they differ, each with the upstream's key (or id) and defaults
    filled in; None when they are the same."""
    now = current.get("after")
    if now is not None:
        upstream = now["schedule_id"]
        now = {"schedule": keys_by_id.get(upstream) or upstream,
               **{k: now.get(k, default) for k, default in DEFAULTS.items()}}
    wanted = None if value is None else {"schedule": value.get("schedule"),
                                         **{k: value.get(k, default) for k, default in DEFAULTS.items()}}
    if wanted is not None and now is not None and wanted["schedule"] == upstream:  # the file named it by id
        wanted["schedule"] = now["schedule"]
    return None if now == wanted else (now, wanted)


def upstream_first(steps: list[Any], specs: list[Any]) -> list[Any]:
    """The schedule steps in an order where a schedule's upstream (by key, in the file) comes before it; the
    others keep their order. A cycle is the server's to refuse: its members keep the file's order."""
    upstream = {spec.key: (spec.fields.get("after") or {}).get("schedule") for spec in specs}

    def depth(key: str) -> int:
        seen: set[str] = set()
        while upstream.get(key) in upstream and key not in seen:
            seen.add(key)
            key = upstream[key]  # type: ignore[assignment]
        return len(seen)

    return sorted(steps, key=lambda step: depth(step.name) if step.kind == "schedule" else 0)

"""`client.schedules`: schedules, their runs, manual runs, backfills and audit trail. A schedule is named by its
id or its key wherever one is taken."""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator, Sequence
from typing import Any, Unpack, cast

from recur_client.fields import ScheduleFields, TimingFields
from recur_client.pages import WALK_PAGE, walk
from recur_client.results import (
    Backfill,
    BackfillPlan,
    BatchDeleted,
    Explanation,
    Page,
    Preview,
    Run,
    RunDetail,
    Schedule,
    ScheduleDescription,
    ScheduleDetail,
    ScheduleEvent,
    Triggered,
)
from recur_client.transport import Transport


def _item(schedule_id: str) -> str:
    """A schedule's path by its id or its key, percent-encoded whole (a key may hold `/`, `:`, `@`, `+`)."""
    return f"/schedules/{urllib.parse.quote(schedule_id, safe='')}/"


class Schedules:
    def __init__(self, transport: Transport) -> None:
        self.transport = transport

    def list(self, *, status: str | None = None, key: str | None = None, workflow_id: int | None = None,
             owner_id: int | None = None, limit: int | None = None, offset: int | None = None,
             cursor: str | None = None) -> Page[Schedule]:
        """One page of the schedules the token's owner sees (an admin: everyone's, or `owner_id`'s)."""
        query = {"status": status, "key": key, "workflow_id": workflow_id, "owner_id": owner_id, "limit": limit,
                 "offset": offset, "cursor": cursor}
        return cast(Page[Schedule], self.transport.request("GET", "/schedules/", query=query))

    def iterate(self, *, status: str | None = None, key: str | None = None, workflow_id: int | None = None,
                owner_id: int | None = None) -> Iterator[Schedule]:
        """Every schedule of the list, walked page by page by cursor."""
        return walk(lambda cursor: self.list(status=status, key=key, workflow_id=workflow_id, owner_id=owner_id,
                                             limit=WALK_PAGE, cursor=cursor))

    def get(self, schedule_id: str) -> ScheduleDescription:
        """One schedule with its timing in words, next runs, recent runs and their counts."""
        return cast(ScheduleDescription, self.transport.request("GET", _item(schedule_id)))

    def create(self, **fields: Unpack[ScheduleFields]) -> ScheduleDetail:
        """A new schedule: `name`, `workflow_id` and one kind of timing are needed."""
        return cast(ScheduleDetail, self.transport.request("POST", "/schedules/", dict(fields)))

    def update(self, schedule_id: str, **fields: Unpack[ScheduleFields]) -> ScheduleDetail:
        """Change the fields given (PATCH); a timing change re-plans the schedule."""
        return cast(ScheduleDetail, self.transport.request("PATCH", _item(schedule_id), dict(fields)))

    def delete(self, schedule_id: str) -> None:
        """Delete a schedule with its run history and pending runs."""
        self.transport.request("DELETE", _item(schedule_id))

    def delete_many(self, schedule_ids: Sequence[str]) -> BatchDeleted:
        """Delete several schedules at once; the answer names those deleted and those not found."""
        body = {"schedule_ids": list(schedule_ids)}
        return cast(BatchDeleted, self.transport.request("POST", "/schedules/batch-delete/", body))

    def pause(self, schedule_id: str, note: str | None = None) -> ScheduleDetail:
        """Pause an active schedule (BadRequest if it is not active); `note` says why."""
        body = {"note": note} if note is not None else {}
        return cast(ScheduleDetail, self.transport.request("POST", f"{_item(schedule_id)}pause/", body))

    def resume(self, schedule_id: str) -> ScheduleDetail:
        """Resume a paused schedule from its next tick after now."""
        return cast(ScheduleDetail, self.transport.request("POST", f"{_item(schedule_id)}resume/", {}))

    def preview(self, count: int | None = None, **timing: Unpack[TimingFields]) -> Preview:
        """What a timing means, as if a schedule were created with it now: its words and next runs."""
        body: dict[str, Any] = dict(timing)
        if count is not None:
            body["count"] = count
        return cast(Preview, self.transport.request("POST", "/schedules/preview/", body))

    def explain(self, schedule_id: str, at: str | None = None) -> Explanation:
        """Why the schedule did or didn't run at `at` (ISO 8601; default now), or at its nearest tick to it."""
        return cast(Explanation, self.transport.request("GET", f"{_item(schedule_id)}explain/",
                                                        query={"at": at}))

    def runs(self, schedule_id: str, *, limit: int | None = None, offset: int | None = None,
             cursor: str | None = None) -> Page[Run]:
        """One page of a schedule's runs, newest first."""
        query = {"limit": limit, "offset": offset, "cursor": cursor}
        return cast(Page[Run], self.transport.request("GET", f"{_item(schedule_id)}runs/", query=query))

    def run(self, schedule_id: str, run_id: str) -> RunDetail:
        """One run with its traceback, captured output, log lines and return value."""
        return cast(RunDetail, self.transport.request("GET", f"{_item(schedule_id)}runs/{run_id}/"))

    def iterate_runs(self, schedule_id: str) -> Iterator[Run]:
        """Every run of a schedule, newest first, walked page by page by cursor."""
        return walk(lambda cursor: self.runs(schedule_id, limit=WALK_PAGE, cursor=cursor))

    def trigger(self, schedule_id: str, *, overlap: str | None = None,
                idempotency_key: str | None = None) -> Triggered:
        """Run the schedule's task once now, outside its timing; the same `idempotency_key` sent again gets
        the first answer and no second run."""
        body = {"overlap": overlap} if overlap is not None else {}
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key is not None else None
        return cast(Triggered, self.transport.request("POST", f"{_item(schedule_id)}trigger/", body,
                                                      headers=headers))

    def backfill(self, schedule_id: str, start: str, end: str, *, overlap: str | None = None) -> Backfill:
        """Run every nominal time in [start, end), oldest first, one at a time."""
        body: dict[str, Any] = {"start": start, "end": end, "dry_run": False}
        if overlap is not None:
            body["overlap"] = overlap
        return cast(Backfill, self.transport.request("POST", f"{_item(schedule_id)}backfill/", body))

    def plan_backfill(self, schedule_id: str, start: str, end: str) -> BackfillPlan:
        """A backfill's dry run: the nominal times in [start, end) it would run; runs none."""
        body = {"start": start, "end": end, "dry_run": True}
        return cast(BackfillPlan, self.transport.request("POST", f"{_item(schedule_id)}backfill/", body))

    def backfills(self, schedule_id: str, *, limit: int | None = None, offset: int | None = None,
                  cursor: str | None = None) -> Page[Backfill]:
        """One page of a schedule's backfills, newest first."""
        query = {"limit": limit, "offset": offset, "cursor": cursor}
        return cast(Page[Backfill],
                    self.transport.request("GET", f"{_item(schedule_id)}backfills/", query=query))

    def cancel_backfill(self, schedule_id: str, backfill_id: str) -> Backfill:
        """Stop a backfill: runs not yet started are not started."""
        return cast(Backfill,
                    self.transport.request("DELETE", f"{_item(schedule_id)}backfills/{backfill_id}/"))

    def events(self, schedule_id: str, *, limit: int | None = None, offset: int | None = None,
               cursor: str | None = None) -> Page[ScheduleEvent]:
        """One page of a schedule's audit trail, newest first."""
        query = {"limit": limit, "offset": offset, "cursor": cursor}
        return cast(Page[ScheduleEvent],
                    self.transport.request("GET", f"{_item(schedule_id)}events/", query=query))

    def iterate_events(self, schedule_id: str) -> Iterator[ScheduleEvent]:
        """A schedule's whole audit trail, walked page by page by cursor."""
        return walk(lambda cursor: self.events(schedule_id, limit=WALK_PAGE, cursor=cursor))

"""`client.workflows`: workflows (a registered task and its policies) and each one's circuit breaker."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Unpack, cast

from recur_client.fields import WorkflowFields, WorkflowPolicies
from recur_client.pages import WALK_PAGE, walk
from recur_client.results import Breaker, Page, Workflow
from recur_client.transport import Transport


class Workflows:
    def __init__(self, transport: Transport) -> None:
        self.transport = transport

    def list(self, *, owner_id: int | None = None, limit: int | None = None, offset: int | None = None,
             cursor: str | None = None) -> Page[Workflow]:
        """One page of the workflows the token's owner sees, oldest first."""
        query = {"owner_id": owner_id, "limit": limit, "offset": offset, "cursor": cursor}
        return cast(Page[Workflow], self.transport.request("GET", "/workflows/", query=query))

    def iterate(self, *, owner_id: int | None = None) -> Iterator[Workflow]:
        """Every workflow of the list, walked page by page by cursor."""
        return walk(lambda cursor: self.list(owner_id=owner_id, limit=WALK_PAGE, cursor=cursor))

    def get(self, workflow_id: int) -> Workflow:
        return cast(Workflow, self.transport.request("GET", f"/workflows/{workflow_id}/"))

    def create(self, name: str, task: str, **fields: Unpack[WorkflowPolicies]) -> Workflow:
        """A new workflow running the registered `task` (GET /tasks/ lists them)."""
        body = {**fields, "name": name, "task": task}
        return cast(Workflow, self.transport.request("POST", "/workflows/", body))

    def update(self, workflow_id: int, **fields: Unpack[WorkflowFields]) -> Workflow:
        """Change the fields given (PATCH): name, task, limits, breaker settings, queue."""
        return cast(Workflow, self.transport.request("PATCH", f"/workflows/{workflow_id}/", dict(fields)))

    def delete(self, workflow_id: int) -> None:
        """Delete a workflow and every schedule of it."""
        self.transport.request("DELETE", f"/workflows/{workflow_id}/")

    def breaker(self, workflow_id: int) -> Breaker:
        """The workflow's circuit breaker: its state, consecutive failures and newest transitions."""
        return cast(Breaker, self.transport.request("GET", f"/workflows/{workflow_id}/breaker/"))

    def reset_breaker(self, workflow_id: int) -> Breaker:
        """Close the workflow's breaker by hand: its schedules' ticks run again."""
        return cast(Breaker, self.transport.request("POST", f"/workflows/{workflow_id}/breaker/reset/", {}))

"""A step of `recur apply`'s plan: what it does to one workflow, webhook, calendar or keyed schedule."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

CREATE, UPDATE, DELETE, UNCHANGED = "create", "update", "delete", "unchanged"


@dataclass
class Step:
    kind: str  # "workflow", "webhook" or "schedule"
    name: str  # a workflow's name, a webhook's URL, a schedule's key
    action: str
    changes: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # field: (now, after)
    body: dict[str, Any] = field(default_factory=dict)  # what is sent (create, update)
    target: Any = None  # the server's id (update, delete)
    workflow: str | None = None  # a schedule's workflow, by name
    secret: str | None = None  # a created webhook's signing secret: the one time the server shows it

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "name": self.name, "action": self.action}
        if self.target is not None:
            out["id"] = self.target
        if self.action == UPDATE:
            out["changes"] = {k: {"from": old, "to": new} for k, (old, new) in self.changes.items()}
        if self.action == CREATE:
            out["fields"] = self.body
        if self.secret is not None:
            out["secret"] = self.secret
        return out

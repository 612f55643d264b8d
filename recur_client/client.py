"""The client: one object holding the server's URL and a token, with a namespace per resource."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any, cast

from recur_client.accounts import Owners, Tokens
from recur_client.calendars import Calendars
from recur_client.pages import WALK_PAGE, walk
from recur_client.results import Health, Owner, Page, Task
from recur_client.schedules import Schedules
from recur_client.transport import Transport
from recur_client.webhooks import Webhooks
from recur_client.workflows import Workflows

DEFAULT_URL = "http://127.0.0.1:5000"
# An apply may carry 100,000 changes; the server holds it to RECUR_APPLY_DEADLINE_SECONDS (300 s by default),
# not to the request deadline, and so this client waits as long for its answer.
APPLY_SECONDS = 330.0


class Client:
    """A Recur server's API as Python calls: `Client(url, token).schedules.pause(id)`.

    Each operation is a method of a namespace (`schedules`, `workflows`, `webhooks`, `tokens`, `owners`) or of
    the client itself (`me`, `health`, `tasks`); answers are the API's JSON as typed dicts, errors are ApiError
    subclasses. `request` and its shorthands call any path of the API directly."""

    def __init__(self, url: str = DEFAULT_URL, token: str | None = None, timeout: float = 30.0) -> None:
        self.transport = Transport(url, token, timeout)
        self.schedules = Schedules(self.transport)
        self.workflows = Workflows(self.transport)
        self.webhooks = Webhooks(self.transport)
        self.tokens = Tokens(self.transport)
        self.owners = Owners(self.transport)
        self.calendars = Calendars(self.transport)

    @classmethod
    def from_env(cls, timeout: float = 30.0) -> Client:
        """A client for RECUR_URL (default http://127.0.0.1:5000) with RECUR_TOKEN, as the `recur` CLI reads
        them."""
        return cls(os.environ.get("RECUR_URL", DEFAULT_URL), os.environ.get("RECUR_TOKEN"), timeout)

    @property
    def base(self) -> str:
        return self.transport.base

    @property
    def token(self) -> str | None:
        return self.transport.token

    def me(self) -> Owner:
        """The owner the token belongs to."""
        return cast(Owner, self.transport.request("GET", "/me/"))

    def health(self, ready: bool = False) -> Health:
        """Whether the server's database and Redis answer, and which queues have live workers (counts and the
        worker processes for an admin). A server with either down answers 503: Unavailable, whose `body` is
        this same shape saying what is down; with `ready` (the readiness form), so does one that is degraded."""
        return cast(Health, self.transport.request("GET", "/health/", query={"ready": True if ready else None}))

    def apply(self, changes: dict[str, Any], dry_run: bool = False) -> dict[str, Any]:
        """Many changes whole or none (POST /apply/): `changes` holds `workflows`, `webhooks`, `calendars` and
        `schedules`, each with `create`, `update` (and, but for workflows, `delete`) lists. Answers what was
        created, kind by kind, in order (a webhook with its secret, shown this once); a refusal is an ApiError
        naming the change, and nothing of the apply was kept. `dry_run`: every check, nothing kept."""
        return cast(dict[str, Any], self.transport.request("POST", "/apply/", {**changes, "dry_run": dry_run},
                                                           timeout=APPLY_SECONDS))

    def apply_file(self, file: dict[str, Any], prune: bool = False, dry_run: bool = False) -> dict[str, Any]:
        """Make your workflows, webhooks, calendars and keyed schedules what `file` says (POST /apply/file/:
        what `recur apply` reads from YAML), whole or not at all. Answers each step (`kind`, `name`, `action`,
        `id`, `changes`, a created webhook's `secret`, shown this once) and `warnings`. `prune`: also delete what
        the file no longer lists; `dry_run`: every check, nothing kept."""
        return cast(dict[str, Any], self.transport.request(
            "POST", "/apply/file/", {"file": file, "prune": prune, "dry_run": dry_run}, timeout=APPLY_SECONDS))

    def tasks(self) -> list[Task]:
        """The tasks the server's code registered: what a workflow may name."""
        return cast(list[Task], self.transport.request("GET", "/tasks/")["items"])

    # --- any path of the API ----------------------------------------------------------------

    def request(self, method: str, path: str, body: Any = None, query: dict[str, Any] | None = None,
                extra_headers: dict[str, str] | None = None) -> Any:
        """Call /api/v1 + `path` and return its decoded JSON: for an operation newer than this client."""
        return self.transport.request(method, path, body, query, extra_headers)

    def get(self, path: str, **query: Any) -> Any:
        return self.request("GET", path, query=query)

    def post(self, path: str, body: Any = None, headers: dict[str, str] | None = None) -> Any:
        return self.request("POST", path, body if body is not None else {}, extra_headers=headers)

    def patch(self, path: str, body: Any) -> Any:
        return self.request("PATCH", path, body)

    def delete(self, path: str) -> Any:
        return self.request("DELETE", path)

    def every(self, path: str, **query: Any) -> Iterator[Any]:
        """Every item of the list at `path`, walked page by page by cursor."""
        return walk(lambda cursor: cast(Page[Any], self.get(path, **query, limit=WALK_PAGE, cursor=cursor)))

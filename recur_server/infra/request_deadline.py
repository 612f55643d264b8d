"""The one exception of a request past its deadline, apart from the API so that gunicorn's worker class
(recur_server.serving), which gunicorn's master imports, needs nothing of the server to name it."""

from __future__ import annotations


class RequestDeadline(Exception):  # noqa: N818 - named for what happened, as TimeoutError is
    """Raised inside a request's thread by the web worker's watchdog (recur_server.serving) when the request has run
    past RECUR_REQUEST_DEADLINE_SECONDS; the API answers it 503 `request_timeout` (recur_server.api.errors)."""

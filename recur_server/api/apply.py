"""/apply/: many changes to the caller's workflows, webhooks, calendars and schedules, whole or not at all
(recur_server.services.apply); /apply/file/: a file of them planned here first (recur_server.declarations.file;
what `recur apply` and the importers send)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from flask import current_app, request
from flask.views import MethodView

from recur_server.api.blueprint import api
from recur_server.api.errors import LIMITS_KEY
from recur_server.auth.scope import caller
from recur_server.declarations import file
from recur_server.infra import clock
from recur_server.schemas.apply import ApplyFileIn, ApplyFileOut, ApplyIn, ApplyOut
from recur_server.services import apply as applying


def _sized_as_an_apply(view: Callable[..., Any]) -> Callable[..., Any]:
    """An apply's body may be up to RECUR_MAX_APPLY_BODY_BYTES, not RECUR_MAX_BODY_BYTES: it may carry 100,000
    changes (MAX_CHANGES). Its time, RECUR_APPLY_DEADLINE_SECONDS, is held by the web worker
    (recur_server.serving)."""
    @functools.wraps(view)
    def sized(*args: Any, **kwargs: Any) -> Any:
        request.max_content_length = current_app.config["RECUR_MAX_APPLY_BODY_BYTES"]
        request.environ[LIMITS_KEY] = ("RECUR_MAX_APPLY_BODY_BYTES", "RECUR_APPLY_DEADLINE_SECONDS")
        return view(*args, **kwargs)
    return sized


@api.route("/apply/", endpoint="apply")
class Apply(MethodView):
    decorators = [_sized_as_an_apply]

    @api.arguments(ApplyIn)
    @api.response(200, ApplyOut)
    @api.errors(409)
    def post(self, data: dict[str, Any]) -> dict[str, Any]:
        """Apply many changes whole, or none of them

        Each change is what its own endpoint does, with the same checks; they are carried out in one
        transaction, in the order workflows, webhooks, calendars, schedules (created, changed, deleted), calendars
        deleted. The first change refused is answered (its field named as `schedules.create.2.cron`, its message
        starting with the change) and nothing of the apply is kept. With `dry_run`, every change is carried
        out and rolled back: the answer is what a real apply would meet.
        """
        return applying.apply(caller().id, data, clock.utcnow())


@api.route("/apply/file/", endpoint="apply_file")
class ApplyFile(MethodView):
    decorators = [_sized_as_an_apply]

    @api.arguments(ApplyFileIn)
    @api.response(200, ApplyFileOut)
    @api.errors(409)
    def post(self, data: dict[str, Any]) -> dict[str, Any]:
        """Make your workflows, webhooks, calendars and keyed schedules what a file says, whole or not at all

        What `recur apply` sends (docs/apply.md). Workflows are matched by name, webhooks by url, calendars by
        name, schedules by key; only the fields the file gives are compared, and only those that differ are
        changed (an unchanged schedule is not touched). The changes are carried out as POST /apply/ carries
        them out: in one transaction, the first refused named by its place in the file (`file.schedules.3.cron`,
        the message starting with `schedule KEY:`), and nothing kept. The answer lists every step, what it
        changed (`from`, `to`), the ids of what it made and a created webhook's secret, shown this once.
        """
        return file.apply_file(caller().id, data, clock.utcnow())

"""/apply/: many changes to the caller's workflows, webhooks, calendars and schedules, whole or not at all
(recur_server.services.apply; `recur apply` and the importers send theirs here)."""

from __future__ import annotations

from typing import Any

from flask.views import MethodView

from recur_server.api.blueprint import api
from recur_server.auth.scope import caller
from recur_server.infra import clock
from recur_server.schemas.apply import ApplyIn, ApplyOut
from recur_server.services import apply as applying


@api.route("/apply/", endpoint="apply")
class Apply(MethodView):
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

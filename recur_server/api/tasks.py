"""/tasks/: the registered tasks a workflow may name, with the import path of each task's function (the
importers of `recur` map rq-scheduler jobs and crontab lines to tasks by it)."""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from marshmallow import Schema, fields

from recur_server.api.blueprint import api
from recur_server.schemas.fields import out
from recur_server.tasks import get_task, task_names


class TaskOut(Schema):
    name = out(fields.String())
    path = out(fields.Method("_path", metadata={"type": "string",
                                                "description": "module.function of the task's callable"}))

    def _path(self, task: dict[str, str]) -> str:
        fn = get_task(task["name"])
        return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', '?')}"


class TaskList(Schema):
    items = out(fields.List(fields.Nested(TaskOut)))


@api.route("/tasks/", endpoint="tasks")
class Tasks(MethodView):
    @api.response(200, TaskList)
    def get(self) -> dict[str, Any]:
        """List the registered tasks"""
        return {"items": [{"name": name} for name in task_names()]}

"""/tasks/: the registered tasks a workflow may name, with the import path of each task's function (the
importers of `recur` map rq-scheduler jobs and crontab lines to tasks by it)."""

from __future__ import annotations

from flask import Response, jsonify
from marshmallow import Schema, fields

from app.api.contract import documented
from app.api.views import api
from app.tasks import get_task, task_names


class TaskOut(Schema):
    name = fields.String(required=True)
    path = fields.String(required=True, metadata={"description": "module.function of the task's callable"})


class TaskList(Schema):
    items = fields.List(fields.Nested(TaskOut), required=True)


@api.get("/tasks/")
@documented(summary="List the registered tasks", answer=TaskList)
def list_tasks() -> Response:
    items = []
    for name in task_names():
        fn = get_task(name)
        items.append({"name": name, "path": f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', '?')}"})
    return jsonify({"items": items})

"""Reading an apply file: YAML with `workflows` (matched by name), `schedules` (matched by `key`) and
`webhooks` (matched by `url`).

Each schedule names its workflow by name (`workflow:`) and takes every other field the API takes; the file is
checked here for its shape only (keys, names, references); the API checks each value when it is applied.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from recur_cli.apply_calendars import calendars_of
from recur_cli.filetypes import FileError, jsonable

# Relative to the moment it is applied, so a second apply would always see a change: files use `at`.
NOT_IN_FILES = {"after_seconds": "give `at` (an instant) instead: after_seconds would move on every apply",
                "workflow_id": "name the workflow with `workflow: NAME` (ids differ between servers)",
                "calendar_id": "name the calendar with `calendar: NAME` (ids differ between servers)"}


@dataclass
class WorkflowSpec:
    name: str
    task: str
    fields: dict[str, Any] = field(default_factory=dict)  # the workflow's policy fields, as the API takes them


@dataclass
class ScheduleSpec:
    key: str
    workflow: str
    fields: dict[str, Any] = field(default_factory=dict)  # every API field but workflow_id, JSON-ready


@dataclass
class WebhookSpec:
    url: str  # its identity: the server gives a webhook no name, and a receiver is its URL
    event_types: list[str]


# A webhook's secret is the server's to make and to show once (`recur apply` prints it when it creates the
# webhook): a file is committed, copied and shown in reviews, so it never holds one.
WEBHOOK_FIELDS = {"url", "event_types"}


@dataclass
class ApplyFile:
    workflows: list[WorkflowSpec]
    schedules: list[ScheduleSpec]
    webhooks: list[WebhookSpec] = field(default_factory=list)
    # Only a file with a `webhooks` entry (even an empty list) speaks for the owner's webhooks: --prune
    # deletes the ones it does not list. A file without one leaves every webhook alone.
    declares_webhooks: bool = False
    # A file's `calendars` (recur_cli.apply_calendars.CalendarSpec), matched by name; --prune deletes the
    # owner's unlisted calendars only when the file has a `calendars` entry.
    calendars: list[Any] = field(default_factory=list)
    declares_calendars: bool = False


def load(text: str, source: str = "the file") -> ApplyFile:
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise FileError(f"{source} is not valid YAML: {exc}") from None
    if document is None:
        document = {}
    if not isinstance(document, dict):
        raise FileError(f"{source}: the top level must be a mapping with `workflows` and `schedules`")
    unknown = set(document) - {"workflows", "schedules", "webhooks", "calendars"}
    if unknown:
        raise FileError(f"{source}: unknown top-level entries {sorted(unknown)}; only workflows, schedules, "
                        "webhooks and calendars")
    workflows = [_workflow(item, i) for i, item in enumerate(_list(document, "workflows"))]
    names = [w.name for w in workflows]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise FileError(f"workflows named more than once: {twice}")
    schedules = [_schedule(item, i) for i, item in enumerate(_list(document, "schedules"))]
    keys = [s.key for s in schedules]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise FileError(f"schedule keys used more than once: {twice}")
    webhooks = [_webhook(item, i) for i, item in enumerate(_list(document, "webhooks"))]
    urls = [w.url for w in webhooks]
    twice = sorted({u for u in urls if urls.count(u) > 1})
    if twice:
        raise FileError(f"webhook URLs listed more than once: {twice} (give one entry all its event types)")

    return ApplyFile(workflows, schedules, webhooks, "webhooks" in document, calendars_of(document),
                     "calendars" in document)


def _list(document: dict[str, Any], name: str) -> list[Any]:
    value = document.get(name) or []
    if not isinstance(value, list):
        raise FileError(f"`{name}` must be a list")
    return value


def _workflow(item: Any, index: int) -> WorkflowSpec:
    where = f"workflows[{index}]"
    if not isinstance(item, dict) or not {"name", "task"} <= set(item):
        raise FileError(f"{where}: give `name` and `task` (and any other workflow field)")
    if not all(isinstance(item[k], str) and item[k] for k in ("name", "task")):
        raise FileError(f"{where}: name and task must be non-empty text")
    return WorkflowSpec(item["name"], item["task"],
                        {k: jsonable(v) for k, v in item.items() if k not in ("name", "task")})


def _schedule(item: Any, index: int) -> ScheduleSpec:
    where = f"schedules[{index}]"
    if not isinstance(item, dict):
        raise FileError(f"{where}: must be a mapping")
    key, workflow = item.get("key"), item.get("workflow")
    if not isinstance(key, str) or not key:
        raise FileError(f"{where}: every schedule needs a `key` (your own unique name for it)")
    if not isinstance(workflow, str) or not workflow:
        raise FileError(f"{where} ({key}): needs `workflow: NAME`")
    for name, reason in NOT_IN_FILES.items():
        if name in item:
            raise FileError(f"{where} ({key}): {name}: {reason}")
    fields = {k: jsonable(v) for k, v in item.items() if k != "workflow"}
    return ScheduleSpec(key, workflow, fields)


def _webhook(item: Any, index: int) -> WebhookSpec:
    where = f"webhooks[{index}]"
    if not isinstance(item, dict):
        raise FileError(f"{where}: must be a mapping with `url` and `event_types`")
    if "secret" in item:
        raise FileError(f"{where}: no `secret` in a file: the server makes one when apply creates the webhook "
                        "and apply prints it that once")
    unknown = set(item) - WEBHOOK_FIELDS
    if unknown:
        raise FileError(f"{where}: unknown fields {sorted(unknown)}; a webhook takes url and event_types")
    url, types = item.get("url"), item.get("event_types")
    if not isinstance(url, str) or not url:
        raise FileError(f"{where}: every webhook needs a `url` (apply matches webhooks by it)")
    if not isinstance(types, list) or not types or not all(isinstance(t, str) and t for t in types):
        raise FileError(f"{where} ({url}): `event_types` must be a non-empty list of event types")
    return WebhookSpec(url, sorted(set(types)))

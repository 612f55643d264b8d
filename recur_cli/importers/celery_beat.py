"""A Celery app's `beat_schedule` as Recur declarations. The app is loaded as `celery -A MODULE:APP` loads
it (its task modules too: `include`, `imports` and autodiscovery), each entry's task found in the app's
registry and declared by its function (`task.run`), its schedule read from Celery's own objects. Reading it
imports the team's code: this runs in the CLI's process only, never on the server."""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from datetime import datetime, timedelta
from typing import Any

from recur_cli.importers.declarations import Declared, ImportedCode, importable, json_value, unique_keys

MAX_TIMEOUT_SECONDS = 7 * 86400
# Options of apply_async that Recur has no equivalent of: each one an entry sets gets a note.
NOT_CARRIED = ("priority", "routing_key", "exchange", "headers", "countdown", "eta", "link", "link_error",
               "serializer", "compression", "soft_time_limit", "retry", "retry_policy", "shadow")


def load_app(spec: str) -> Any:
    """The Celery app `MODULE:APP` names (or MODULE's `app` or `celery`), with its task modules imported and
    its registry finalized. Raises ValueError naming what is missing."""
    from celery import Celery

    if os.getcwd() not in sys.path:  # as `celery -A` does: the app's package is found from here
        sys.path.insert(0, os.getcwd())
    module_name, _, attribute = spec.partition(":")
    module = importlib.import_module(module_name)
    candidates = attribute.split(".") if attribute else None
    app: Any = module
    if candidates is None:
        found = [getattr(module, name) for name in ("app", "celery") if isinstance(getattr(module, name, None), Celery)]
        if not found:
            raise ValueError(f"{module_name} has no Celery app named app or celery: give MODULE:APP")
        app = found[0]
    else:
        for name in candidates:
            app = getattr(app, name)
    if not isinstance(app, Celery):
        raise ValueError(f"{spec} is a {type(app).__name__}, not a Celery app")
    app.loader.import_default_modules()
    app.finalize(auto=True)
    return app


def import_beat(app: Any, timezone: str | None = None, keep_queues: bool = False) -> ImportedCode:
    """`timezone`: the zone of the app's crontabs when its configuration names none (Celery then uses UTC,
    or with enable_utc=False the host's zone). `keep_queues`: declare each entry's `options.queue`."""
    zone = timezone or app.conf.timezone or "UTC"
    imported = ImportedCode()
    if not keep_queues:
        imported.header.append("Celery's queues are not carried: every entry runs on Recur's queue (RECUR_QUEUE); "
                               "--keep-queues declares each entry's options.queue")
    entries = list((app.conf.beat_schedule or {}).items())
    keys = unique_keys("celery-beat", [(name, name) for name, _ in entries])
    for (name, entry), key in zip(entries, keys, strict=True):
        declared, why = _declaration(app, str(name), entry, key, str(zone), keep_queues)
        if declared is None:
            imported.unmapped.append((str(name), why or "?"))
        else:
            imported.declarations.append(declared)
    return imported


def _declaration(app: Any, name: str, entry: Any, key: str, zone: str,
                 keep_queues: bool) -> tuple[Declared | None, str | None]:
    if not isinstance(entry, dict) or "task" not in entry or "schedule" not in entry:
        return None, "not a beat entry (a dict with task and schedule)"
    task_name = entry["task"]
    task = app.tasks.get(task_name)
    if task is None:
        return None, f"the app has no task {task_name!r} (is its module in include or imports?)"
    function: Any = getattr(task, "run", None)
    if inspect.ismethod(function):
        return None, (f"{task_name} is a bound task (bind=True) or a Task class: its function takes the task as "
                      "self; declare a plain function that does its work")
    problem = importable(function)
    if problem is not None:
        return None, problem
    options: dict[str, Any] = {"key": key, "name": name}
    notes: list[str] = []
    timing, why = _timing(app, entry["schedule"], entry.get("relative", False), zone, notes)
    if timing is None:
        return None, why
    options.update(timing)
    for argument, wanted in (("args", (list, tuple)), ("kwargs", dict)):
        value = entry.get(argument)
        if value is None or value in ((), [], {}):
            continue
        if not isinstance(value, wanted) or not json_value(list(value) if argument == "args" else value):
            return None, f"its {argument} are not JSON values (a declaration's {argument} must be JSON)"
        options[argument] = list(value) if argument == "args" else dict(value)
    _options(entry.get("options") or {}, task, options, notes, keep_queues)
    # Celery's task object, which the module defines under the function's name: its `run` is the function.
    return Declared(name, function.__module__, function.__qualname__, options, attribute="run", notes=notes), None


def _timing(app: Any, schedule: Any, relative: bool, zone: str,
            notes: list[str]) -> tuple[dict[str, Any] | None, str | None]:
    from celery.beat import maybe_schedule
    from celery.schedules import crontab, solar
    from celery.schedules import schedule as every
    from croniter import croniter

    schedule = maybe_schedule(schedule, relative, app)
    if isinstance(schedule, solar):
        return None, (f"solar({schedule.event!r}, {schedule.lat}, {schedule.lon}): the sun's events move with the "
                      "date (solar noon by a quarter of an hour over a year, sunrise by hours), and Recur has no "
                      "sun-position timing: declare a cron at a fixed time instead")
    if isinstance(schedule, crontab):
        fields = [_cron_field(getattr(schedule, f"_orig_{name}")) for name in
                  ("minute", "hour", "day_of_month", "month_of_year", "day_of_week")]
        expression = " ".join(fields)
        if not croniter.is_valid(expression):
            return None, f"crontab {expression!r} has no cron equivalent"
        timing: dict[str, Any] = {"cron": expression, "tz": zone}
        if fields[2] != "*" and fields[4] != "*":  # Celery needs both days to match; cron takes either
            timing["day_or"] = False
        return timing, None
    if type(schedule) is every:
        seconds = schedule.run_every.total_seconds()
        if seconds <= 0 or seconds != int(seconds):
            return None, f"every {seconds} s: Recur's intervals are whole seconds"
        if relative:
            notes.append("relative=True (runs aligned to the period) is not carried: give anchor= to align them")
        return {"interval": int(seconds)}, None
    return None, f"a {type(schedule).__name__} schedule: only crontab, timedelta and seconds map to Recur"


def _cron_field(value: Any) -> str:
    if isinstance(value, (int, str)):
        return str(value).replace(" ", "")
    return ",".join(str(v) for v in sorted(value))


def _options(given: dict[str, Any], task: Any, options: dict[str, Any], notes: list[str],
             keep_queues: bool) -> None:
    """apply_async options and the task's own limits: queue, expires, time_limit; others are noted."""
    if given.get("queue") and keep_queues:
        options["queue"] = given["queue"]
    expires = given.get("expires")
    if isinstance(expires, (int, float)) and not isinstance(expires, bool) and expires >= 1:
        # Celery drops a message not started `expires` seconds after beat sent it; Recur never runs a tick
        # claimed more than catch_up_window_seconds after its nominal time.
        options["catch_up_window_seconds"] = int(expires)
    elif isinstance(expires, timedelta) and expires.total_seconds() >= 1:
        options["catch_up_window_seconds"] = int(expires.total_seconds())
    elif expires is not None:
        kind = "an instant" if isinstance(expires, datetime) else repr(expires)
        notes.append(f"not carried: expires={kind} (only a number of seconds maps, to catch_up_window_seconds)")
    limit = given.get("time_limit", getattr(task, "time_limit", None))
    if isinstance(limit, (int, float)) and 1 <= limit <= MAX_TIMEOUT_SECONDS:
        options["timeout"] = int(limit)
    elif limit is not None:
        notes.append(f"not carried: time_limit={limit!r} (Recur's timeout is 1 s to 7 days)")
    for option in NOT_CARRIED:
        if option in given:
            notes.append(f"not carried: options {option}={given[option]!r}")

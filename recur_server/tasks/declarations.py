"""Schedules declared in code, next to their functions: what a task module asks for, kept until sync reads it.

A declaration names a function object, never a path: the function is registered as a task under its dotted
path (`reports.jobs.send_report`) when the module that declares it is loaded, in every process that loads
the module (RECUR_TASK_MODULES). HTTP, the console and YAML can then name that task, and only that: nothing
imports a path sent over the network.

Two kinds of function:
- an *event task*, registered with `@task("name")`, is called as `fn(event)`; a declaration may give it a
  `trigger_payload` (the event's payload);
- a *plain function*, anything else, is called as `fn(*args, **kwargs)` with the declaration's JSON `args`
  and `kwargs`, carried in the schedule's payload as {"args": [...], "kwargs": {...}}. It reads the run's
  nominal time, key and attempt from `recur.context()` if it wants them.

Fields are checked against the API's schemas by recur_server.declarations.wanted, when sync reads them (it needs the
app).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from recur_server.tasks.registry import TaskEvent, name_of, task

# The names a declaration may use beside the API's own, and the API field each one sets.
ALIASES = {
    "interval": "interval_seconds", "after": "after_seconds", "tz": "timezone", "retries": "max_retries",
    "timeout": "timeout_seconds", "job_timeout": "timeout_seconds", "payload": "trigger_payload",
    "repeats": "total_repeats", "jitter": "jitter_seconds", "anchor": "anchor_date", "follows": "after",
}
# Options that belong to the declaration's workflow (what runs, and where), not to its schedule.
WORKFLOW_FIELDS = ("queue", "max_concurrent_runs", "concurrency_policy", "breaker_threshold",
                   "breaker_reset_seconds")
# Fields whose value may be given as a timedelta (whole seconds) or a datetime (ISO 8601).
_SECONDS = ("interval_seconds", "after_seconds", "timeout_seconds", "catch_up_window_seconds",
            "alert_after_seconds", "jitter_seconds", "long_after_seconds", "late_after_seconds")
_INSTANTS = ("at", "start_at", "end_at", "anchor_date")
PLAIN_ARGS, PLAIN_KWARGS = "args", "kwargs"


class DeclarationError(ValueError):
    """A declaration that cannot be a schedule: names the declaration's key and the argument at fault."""

    def __init__(self, key: str | None, errors: dict[str, list[str]], where: str = "") -> None:
        self.key, self.errors, self.where = key, errors, where
        detail = "; ".join(f"{name}: {' '.join(messages)}" for name, messages in errors.items())
        super().__init__(f"schedule {key!r}{f' ({where})' if where else ''}: {detail}")


@dataclass
class Declaration:
    """One schedule as the code states it. `fields` are API field names (aliases resolved); `given_as`
    maps each back to the argument the code wrote, so that an error names what the reader sees."""

    key: str
    function: Callable[..., Any]
    fields: dict[str, Any]
    workflow: dict[str, Any]
    args: list[Any] | None = None
    kwargs: dict[str, Any] | None = None
    given_as: dict[str, str] = field(default_factory=dict)
    where: str = ""

    @property
    def task_name(self) -> str:
        """The registered name the workflow names: the event task's, or the plain function's dotted path."""
        return name_of(self.function) or dotted_path(self.function)

    @property
    def plain(self) -> bool:
        """Not an event task: registered (by settle) as a wrapper that passes args and kwargs."""
        return name_of(self.function) is None

    def payload(self) -> Any:
        """The schedule's trigger_payload: a plain function's arguments, or the event task's payload."""
        if self.plain:
            return {PLAIN_ARGS: list(self.args or []), PLAIN_KWARGS: dict(self.kwargs or {})}
        return self.fields.get("trigger_payload")


_DECLARED: dict[str, Declaration] = {}
_PLAIN: dict[Callable[..., Any], Callable[[TaskEvent], Any]] = {}


def dotted_path(function: Callable[..., Any]) -> str:
    return f"{function.__module__}.{function.__qualname__}"


def declare(function: Callable[..., Any], options: dict[str, Any], key: str | None = None,
            args: Any = None, kwargs: Any = None, where: str = "") -> Declaration:
    """Record a schedule of `function` (replacing none: a key declared twice is an error)."""
    path = _importable(function, key, where)
    key = path if key is None else key
    if not isinstance(key, str) or re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.:/@+-]{0,199}", key) is None:
        raise DeclarationError(str(key), {"key": ["letters, digits and _ . : / @ + - only, not starting with a "
                                                  "sign, at most 200"]}, where)
    if key in _DECLARED and _DECLARED[key].function is not function:
        raise DeclarationError(key, {"key": [f"declared twice (first at {_DECLARED[key].where}); give each "
                                             "schedule of a function its own key="]}, where)
    fields: dict[str, Any] = {}
    workflow: dict[str, Any] = {}
    given_as: dict[str, str] = {}
    for name, value in options.items():
        api_name = ALIASES.get(name, name)
        if api_name == "after_seconds" and (isinstance(value, (str, dict)) or callable(value)):
            raise DeclarationError(key, {name: [f"{name}= is a delay (one run that long after the sync); to run "
                                                "when another schedule's run ends, give follows="]}, where)
        if api_name in given_as:
            raise DeclarationError(key, {name: [f"sets {api_name}, which {given_as[api_name]} sets already"]},
                                   where)
        api_name, value = _plain_value(api_name, value)
        given_as[api_name] = name
        (workflow if api_name in WORKFLOW_FIELDS else fields)[api_name] = value
    declaration = Declaration(key, function, fields, workflow, given_as=given_as, where=where)
    if args is not None or kwargs is not None:
        declaration.args, declaration.kwargs = _arguments(key, args, kwargs, where)
    _DECLARED[key] = declaration
    return declaration


def settle() -> list[Declaration]:
    """Register every declared plain function as a task (under its dotted path) and return the declarations,
    in key order. Called once the task modules are loaded: by then `@task` has registered the event tasks,
    whatever order the decorators were stacked in."""
    for declaration in _DECLARED.values():
        function = declaration.function
        if not declaration.plain:
            if declaration.args is not None or declaration.kwargs is not None:
                raise DeclarationError(declaration.key, {"args" if declaration.args is not None else "kwargs": [
                    f"{name_of(function)!r} is an event task (@task): it is called with the run's event; give "
                    "it a payload=, or schedule a plain function with args/kwargs"]}, declaration.where)
            continue
        if declaration.fields.get("trigger_payload") is not None:
            raise DeclarationError(declaration.key, {declaration.given_as["trigger_payload"]: [
                "a plain function is called with args= and kwargs=, not a payload"]}, declaration.where)
        task(dotted_path(function))(_plain_task(function))
    return [_DECLARED[key] for key in sorted(_DECLARED)]


def declared_keys() -> list[str]:
    return sorted(_DECLARED)


def forget(keys: list[str] | None = None) -> None:
    """Drop declarations (all of them without `keys`): for tests that declare and re-declare in one process."""
    for key in list(_DECLARED) if keys is None else keys:
        _DECLARED.pop(key, None)


def _plain_task(function: Callable[..., Any]) -> Callable[[TaskEvent], Any]:
    """The task that calls `function(*args, **kwargs)` with the arguments its schedule's payload carries."""
    if function in _PLAIN:
        return _PLAIN[function]

    def call(event: TaskEvent) -> Any:
        payload = event.get("payload") or {}
        if not isinstance(payload, dict):
            raise TypeError(f"{dotted_path(function)} takes args/kwargs: the payload must be an object")
        args, kwargs = payload.get(PLAIN_ARGS, []), payload.get(PLAIN_KWARGS, {})
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            raise TypeError(f"{dotted_path(function)}: payload args must be a list and kwargs an object")
        return function(*args, **kwargs)

    call.__qualname__ = call.__name__ = f"plain:{function.__qualname__}"
    call.__module__ = function.__module__
    _PLAIN[function] = call
    return call


def _importable(function: Any, key: str | None, where: str) -> str:
    """A worker registers the function by loading its module: it must be a module-level function."""
    if not callable(function) or not hasattr(function, "__qualname__") or not hasattr(function, "__module__"):
        raise DeclarationError(key, {"function": [f"{function!r} is not a function"]}, where)
    path = dotted_path(function)
    if "<" in function.__qualname__ or function.__module__ in (None, "__main__"):
        raise DeclarationError(key, {"function": [f"{path} is not importable by its dotted path: schedule a "
                                                  "function defined at the top level of a task module"]}, where)
    return path


def _arguments(key: str, args: Any, kwargs: Any, where: str) -> tuple[list[Any], dict[str, Any]]:
    if args is not None and not isinstance(args, (list, tuple)):
        raise DeclarationError(key, {"args": ["must be a list (or tuple) of positional arguments"]}, where)
    if kwargs is not None and (not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs)):
        raise DeclarationError(key, {"kwargs": ["must be a dict of keyword arguments with str keys"]}, where)
    for name, value in (("args", list(args or [])), ("kwargs", dict(kwargs or {}))):
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise DeclarationError(key, {name: [f"must be JSON: {exc}"]}, where) from None
    return list(args or []), dict(kwargs or {})


def _plain_value(api_name: str, value: Any) -> tuple[str, Any]:
    """Python values as the API takes them in JSON: a timedelta as whole seconds (every=timedelta(...) sets
    interval_seconds), a datetime as ISO 8601, a set or tuple of days as a list."""
    if isinstance(value, timedelta) and (api_name in _SECONDS or api_name == "every"):
        return "interval_seconds" if api_name == "every" else api_name, _seconds(value)
    if isinstance(value, (datetime, date)) and api_name in _INSTANTS:
        return api_name, value.isoformat()
    if isinstance(value, (set, frozenset, tuple)) and api_name == "not_on":
        return api_name, list(value)
    if api_name == "after" and value is not None:
        return api_name, _follows(value)
    return api_name, value


def _seconds(delta: timedelta) -> float:
    """A timedelta as the API's seconds: whole when it is whole (a fraction: the schema names it)."""
    seconds = delta.total_seconds()
    return int(seconds) if seconds == int(seconds) else seconds


def _follows(value: Any) -> Any:
    """`follows=` as the API's `after`: a key or id, a declared function (its key is found when sync reads
    the declarations, whatever order they were made in), or the API's object, its delay_seconds a timedelta
    if wanted."""
    if isinstance(value, str) or callable(value):
        return {"schedule": value}
    if isinstance(value, dict):
        after = dict(value)
        if isinstance(after.get("delay_seconds"), timedelta):
            after["delay_seconds"] = _seconds(after["delay_seconds"])
        return after
    return value  # the schema names what is wrong with it


def key_of(function: Callable[..., Any], by: str) -> str:
    """The key of the one declaration of `function`, for `follows=function` in the declaration of `by`."""
    keys = [d.key for d in _DECLARED.values() if d.function is function]
    if len(keys) == 1:
        return keys[0]
    name = getattr(function, "__qualname__", repr(function))
    declared = _DECLARED.get(by)
    where, given = (declared.where, declared.given_as.get("after", "follows")) if declared else ("", "follows")
    if not keys:
        raise DeclarationError(by, {given: [f"{name} is not declared as a schedule: declare it, or give the key "
                                            "of the schedule to follow"]}, where)
    raise DeclarationError(by, {given: [f"{name} is declared {len(keys)} times ({', '.join(sorted(keys))}): give "
                                        "the key of the one to follow"]}, where)

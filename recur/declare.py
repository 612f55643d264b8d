"""Declaring schedules next to their functions: `schedule(fn, ...)` as rq cron's `cron.register` reads, and
decorators (`every`, `cron`, `rrule`, `at`, `after`) that declare one schedule of the function they wrap.

Every option is an API field of a schedule (or of its workflow: queue, max_concurrent_runs,
concurrency_policy, breaker_threshold, breaker_reset_seconds), under the API's name or a short alias
(`tz`, `retries`, `timeout`, `payload`, ...: recur_server.tasks.declarations.ALIASES). Values are checked by the API's
own schemas when sync reads them, so a declaration is refused exactly as the same POST would be.
`follows=` (the API's `after`) takes a key, or a declared function: `schedule(load, every="3650d",
follows=extract)` also runs `load` each time a run of `extract` succeeds.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, TypeVar, overload

from recur_server.tasks import declarations as declared
from recur_server.tasks.registry import task as register_task

F = TypeVar("F", bound=Callable[..., Any])


@overload
def task(name: F, /) -> F: ...
@overload
def task(name: str | None = None, /) -> Callable[[F], F]: ...
def task(name: Any = None, /) -> Any:
    """Register an event task, called as `fn(event)`: `@task("reports.daily")`, or bare `@task` to name
    it by its dotted path."""
    if callable(name):
        return register_task(declared.dotted_path(name))(name)

    def decorate(function: F) -> F:
        register_task(name or declared.dotted_path(function))(function)
        return function

    return decorate


def schedule(function: Callable[..., Any] | None = None, queue: str | None = None, /, *, key: str | None = None,
             args: list[Any] | tuple[Any, ...] | None = None, kwargs: dict[str, Any] | None = None,
             **options: Any) -> Any:
    """Declare a schedule of `function`: `schedule(send_report, cron="0 9 * * *", args=[42], key="r-42")`.

    A plain function is called as `function(*args, **kwargs)`; an event task (`@task`) as `function(event)`,
    with `payload=` as the event's payload. `key` names the schedule in the database (default: the
    function's dotted path; two schedules of one function need keys of their own). `queue`, second as in
    rq cron's `register(func, queue_name, ...)`, is one of the cluster's queues. Without `function`, a
    decorator: `@schedule(cron="0 9 * * *")`.
    """
    if queue is not None:
        options["queue"] = queue
    where = _caller()

    def declare(target: Any) -> Any:
        declared.declare(target, options, key, args, kwargs, where)
        return target

    return declare if function is None else declare(function)


register = schedule  # rq cron's name: `register(send_report, "default", cron="0 9 * * *", args=[42])`


def every(spec: str | int | timedelta | None = None, /, *, seconds: float = 0, minutes: float = 0,
          hours: float = 0, days: float = 0, weeks: float = 0, **options: Any) -> Callable[[F], F]:
    """Fixed rate: `@every(minutes=5)`, `@every("15m")`, `@every(timedelta(hours=1))`, `@every(300)`."""
    if spec is None:
        total = timedelta(seconds=seconds, minutes=minutes, hours=hours, days=days, weeks=weeks)
        timing: dict[str, Any] = {"interval_seconds": total}
    elif isinstance(spec, str):
        timing = {"every": spec}
    else:
        timing = {"interval_seconds": spec}
    return _decorator({**timing, **options})


def cron(expression: str, /, **options: Any) -> Callable[[F], F]:
    """Cron, five fields or six (seconds first), in `tz` (default UTC): `@cron("0 9 * * mon-fri", tz=...)`."""
    return _decorator({"cron": expression, **options})


def rrule(rule: str, /, **options: Any) -> Callable[[F], F]:
    """An iCalendar RRULE: `@rrule("FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=17")`."""
    return _decorator({"rrule": rule, **options})


def at(instant: datetime | str, /, **options: Any) -> Callable[[F], F]:
    """Once, at an instant (a datetime with a zone, or ISO 8601)."""
    return _decorator({"at": instant, **options})


def after(delay: int | timedelta, /, **options: Any) -> Callable[[F], F]:
    """Once, `delay` after the sync that creates it (later syncs leave its time alone)."""
    return _decorator({"after_seconds": delay, **options})


def _decorator(options: dict[str, Any]) -> Callable[[F], F]:
    key = options.pop("key", None)
    args, kwargs = options.pop("args", None), options.pop("kwargs", None)
    where = _caller(3)

    def declare(function: F) -> F:
        declared.declare(function, options, key, args, kwargs, where)
        return function

    return declare


def _caller(depth: int = 2) -> str:
    """file:line of the declaration, for error messages."""
    frame = sys._getframe(depth)
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"

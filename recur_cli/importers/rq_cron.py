"""An `rq cron` config module as Recur declarations. The config is read the way `rq cron CONFIG` reads it
(rq's own CronScheduler.load_config_from_file: a dotted module, or a file path), with each
`cron.register(func, queue_name, args=, kwargs=, interval= | cron=, job_timeout=, result_ttl=, ttl=,
failure_ttl=, meta=, webhooks=, name=)` recorded as written, before rq checks it, so that a call rq would
refuse is listed rather than dropped. Reading it imports the team's code: this runs in the CLI's process
only, never on the server."""

from __future__ import annotations

import logging
from typing import Any

from recur_cli.importers.declarations import Declared, ImportedCode, importable, json_value, unique_keys

# rq's defaults for what Recur has no equivalent of: a job that sets another value gets a note.
DEFAULT_RESULT_TTL = 500
NOT_CARRIED = {
    "result_ttl": "result_ttl (how long RQ keeps a result): Recur keeps runs by keep_runs_days and "
                  "RECUR_KEEP_RUNS_DAYS",
    "ttl": "ttl (how long a job may wait in the queue): catch_up_window_seconds is the nearest",
    "failure_ttl": "failure_ttl: a failed run is kept as every run is",
    "meta": "meta: a run has no metadata of the job's own",
    "webhooks": "webhooks: subscribe with Recur's webhooks (run.succeeded, run.failed, ...)",
}


def read_config(config: str) -> list[dict[str, Any]]:
    """The keyword arguments of each `cron.register(...)` call in `config`, in order. Raises ImportError
    (rq's message) when the config cannot be loaded."""
    from redis import Redis
    from rq.cron import CronScheduler

    class Recorder(CronScheduler):
        """rq's scheduler, minus the scheduling: its loader hands each registered job to `register`."""

        def register(self, **call: Any) -> Any:  # type: ignore[override]
            calls.append(call)

    calls: list[dict[str, Any]] = []
    # The connection is never used (redis-py connects on the first command).
    Recorder(connection=Redis(), logging_level=logging.WARNING).load_config_from_file(config)
    return calls


def import_config(calls: list[dict[str, Any]], timezone: str = "UTC", keep_queues: bool = False) -> ImportedCode:
    """`timezone`: the zone rq read the crons in (rq 3 reads them in the zone of the host running `rq cron`,
    rq 2 in UTC). `keep_queues`: declare each job's queue (each must then be one of Recur's queues)."""
    imported = ImportedCode()
    if not keep_queues:
        imported.header.append("rq's queue names are not carried: every job runs on Recur's queue (RECUR_QUEUE); "
                               "--keep-queues declares each job's")
    named = [(_job_name(call), call) for call in calls]
    keys = unique_keys("rq-cron", [(name, _identity(call)) for name, call in named])
    for (name, call), key in zip(named, keys, strict=True):
        declared, why = _declaration(name, call, key, timezone, keep_queues)
        if declared is None:
            imported.unmapped.append((name, why or "?"))
        else:
            imported.declarations.append(declared)
    return imported


def _declaration(name: str, call: dict[str, Any], key: str, timezone: str,
                 keep_queues: bool) -> tuple[Declared | None, str | None]:
    function: Any = call.get("func")
    problem = importable(function)
    if problem is not None:
        return None, problem
    if str(function.__module__).startswith("rq_cron_config_"):
        return None, ("defined in the config file itself, which rq loaded by its path: move it into a module "
                      "(or give the config as a dotted module name)")
    interval, cron = call.get("interval"), call.get("cron")
    if bool(interval) == bool(cron):
        return None, "rq needs exactly one of interval= and cron= (rq cron refuses it too)"
    options: dict[str, Any] = {"key": key, "name": name}
    notes: list[str] = []
    if call.get("queue_name") and keep_queues:
        options["queue"] = call["queue_name"]
    if cron:
        fields = str(cron).split()
        if len(fields) == 6:  # croniter's seconds field is the last; Recur's six-field cron has it first
            fields = fields[5:] + fields[:5]
        options["cron"] = " ".join(fields)
        options["tz"] = timezone
    else:
        if not isinstance(interval, int) or interval <= 0:
            return None, f"interval={interval!r}: not a whole number of seconds"
        options["interval"] = interval
    for argument, wanted in (("args", (list, tuple)), ("kwargs", dict)):
        value = call.get(argument)
        if value is None or value in ((), [], {}):
            continue
        if not isinstance(value, wanted) or not json_value(list(value) if argument == "args" else value):
            return None, f"its {argument} are not JSON values (a declaration's {argument} must be JSON)"
        options[argument] = list(value) if argument == "args" else dict(value)
    timeout = _seconds(call.get("job_timeout"))
    if timeout is not None and 0 < timeout <= 7 * 86400:
        options["timeout"] = timeout
    elif call.get("job_timeout") is not None:
        notes.append(f"job_timeout={call['job_timeout']!r} has no equivalent (1 s to 7 days): Recur's default "
                     "600 s applies")
    for option, note in NOT_CARRIED.items():
        value = call.get(option)
        if value is not None and value != (DEFAULT_RESULT_TTL if option == "result_ttl" else None) and value != []:
            notes.append(f"not carried: {note}")
    return Declared(name, function.__module__, function.__qualname__, options, notes=notes), None


def _job_name(call: dict[str, Any]) -> str:
    """rq's own name of the job: `name=`, or the function's module and name."""
    function = call.get("func")
    return call.get("name") or f"{getattr(function, '__module__', '?')}.{getattr(function, '__name__', '?')}"


def _identity(call: dict[str, Any]) -> Any:
    return {k: v for k, v in call.items() if k in ("interval", "cron", "args", "kwargs", "queue_name")}


def _seconds(timeout: Any) -> int | None:
    """rq's job_timeout: seconds, or a text such as '10m' (rq.utils.parse_timeout)."""
    if timeout is None:
        return None
    from rq.utils import parse_timeout

    try:
        parsed = parse_timeout(timeout)
    except (TypeError, ValueError):
        return None
    return parsed if isinstance(parsed, int) else None

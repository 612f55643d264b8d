"""`recur import rq-scheduler|crontab`: another scheduler's jobs as an apply file (printed), applied with --apply;
`recur import rq-cron|celery-beat`: a config in code as a module of Python declarations (printed)."""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from pathlib import Path

import click

from recur_cli.apply import apply_document
from recur_cli.context import current
from recur_cli.importers.common import Imported, TaskMap, parse_maps
from recur_cli.importers.declarations import ImportedCode

_MAP_HELP = "FROM=TASK: the registered task for a job's function (module.func) or a command's program."


def _task_map(maps: tuple[str, ...]) -> TaskMap:
    tasks = current().client.get("/tasks/")["items"]
    try:
        return TaskMap(tasks, parse_maps(maps))
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None


def _finish(imported: Imported, source: str, apply: bool) -> None:
    click.echo(imported.as_yaml(source), nl=False)
    if imported.unmapped:
        click.echo(f"{len(imported.unmapped)} job(s) not imported (listed at the top)", err=True)
    if apply:  # stdout stays an apply file; what applying it did goes to stderr
        apply_document(imported.document(), err=True)


@click.group("import")
def import_group() -> None:
    """Bring jobs from another scheduler (an apply file, --apply applies it; from code, Python declarations)."""


@import_group.command("rq-scheduler")
@click.option("--redis-url", required=True, help="The Redis that rq-scheduler keeps its jobs in.")
@click.option("--map", "maps", multiple=True, help=_MAP_HELP)
@click.option("--timezone", default="UTC", show_default=True,
              help="The zone of cron jobs made with use_local_timezone=True (the scheduler host's zone).")
@click.option("--apply", "do_apply", is_flag=True, help="Create the schedules too (as recur apply does).")
def rq_scheduler(redis_url: str, maps: tuple[str, ...], timezone: str, do_apply: bool) -> None:
    """rq-scheduler's scheduled jobs: interval, cron, repeat and their arguments."""
    from recur_cli.importers.rq_scheduler import import_jobs, read_jobs

    tasks = _task_map(maps)
    try:
        jobs = read_jobs(redis_url)
    except Exception as exc:  # an unreachable or wrong Redis: say so, as an API error would be
        click.echo(f"error: cannot read rq-scheduler's jobs from {redis_url}: {exc}", err=True)
        raise click.exceptions.Exit(1) from None
    _finish(import_jobs(jobs, tasks, datetime.now(UTC), timezone), f"rq-scheduler at {redis_url}", do_apply)


@import_group.command("crontab")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
@click.option("--map", "maps", multiple=True, help=_MAP_HELP)
@click.option("--system", is_flag=True, help="Lines have a user field (/etc/crontab, /etc/cron.d).")
@click.option("--apply", "do_apply", is_flag=True, help="Create the schedules too (as recur apply does).")
def crontab(path: str, maps: tuple[str, ...], system: bool, do_apply: bool) -> None:
    """crontab lines (CRON_TZ / TZ lines set the zone of the lines after them)."""
    from recur_cli.importers.crontab import import_crontab

    tasks = _task_map(maps)
    text = sys.stdin.read() if path == "-" else Path(path).read_text()
    _finish(import_crontab(text, tasks, system), f"crontab {path}", do_apply)


_OUTPUT_HELP = "Write the module here instead of printing it."
_KEEP_QUEUES_HELP = "Declare each job's queue (each must be one of Recur's: RECUR_QUEUE, RECUR_QUEUES)."


def _finish_code(imported: ImportedCode, source: str, output: str | None) -> None:
    this = Path(output).stem if output else "<this module>"
    text = imported.as_python(source, ",".join([*sorted({d.module for d in imported.declarations}), this]))
    if output:
        Path(output).write_text(text)
        click.echo(f"wrote {len(imported.declarations)} declaration(s) to {output}", err=True)
    else:
        click.echo(text, nl=False)
    if imported.unmapped:
        click.echo(f"{len(imported.unmapped)} job(s) not imported (listed at the top)", err=True)


@import_group.command("rq-cron")
@click.argument("config")
@click.option("--path", "-P", "paths", multiple=True, default=["."], show_default=True,
              help="Where the config's modules are found (added to the import path, as rq's --path).")
@click.option("--timezone", default="UTC", show_default=True,
              help="The zone rq read the crons in: rq 3 reads them in the zone of the host running `rq cron`.")
@click.option("--keep-queues", is_flag=True, help=_KEEP_QUEUES_HELP)
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True), help=_OUTPUT_HELP)
def rq_cron(config: str, paths: tuple[str, ...], timezone: str, keep_queues: bool, output: str | None) -> None:
    """An `rq cron` config module (its cron.register calls) as Python declarations: prints a module to load
    with the functions' own and sync with `flask declarations sync` (imports the config here, in this
    process; nothing of it goes to the server)."""
    from recur_cli.importers.rq_cron import import_config, read_config

    for path in paths:
        if os.path.abspath(path) not in sys.path:
            sys.path.insert(0, os.path.abspath(path))
    try:
        calls = read_config(config)
    except Exception as exc:  # the config's own import error, as rq cron would report it
        click.echo(f"error: cannot load the rq cron config {config}: {exc}", err=True)
        raise click.exceptions.Exit(1) from None
    _finish_code(import_config(calls, timezone, keep_queues), f"the rq cron config {config}", output)


@import_group.command("celery-beat")
@click.argument("app_spec", metavar="MODULE:APP")
@click.option("--timezone", default=None,
              help="The crontabs' zone when the app names none (default: the app's timezone, else UTC).")
@click.option("--keep-queues", is_flag=True, help=_KEEP_QUEUES_HELP)
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True), help=_OUTPUT_HELP)
def celery_beat(app_spec: str, timezone: str | None, keep_queues: bool, output: str | None) -> None:
    """A Celery app's beat_schedule (crontab, timedelta, seconds; args, kwargs, options) as Python
    declarations: prints a module to load with the tasks' own and sync with `flask declarations sync`
    (imports the app here, in this process; nothing of it goes to the server)."""
    from recur_cli.importers.celery_beat import import_beat, load_app

    try:
        app = load_app(app_spec)
    except Exception as exc:  # the app's own import error, or no app there
        click.echo(f"error: cannot load the Celery app {app_spec}: {exc}", err=True)
        raise click.exceptions.Exit(1) from None
    _finish_code(import_beat(app, timezone, keep_queues), f"the beat_schedule of {app_spec}", output)

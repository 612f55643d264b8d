"""`recur import rq-scheduler|crontab`: another scheduler's jobs as an apply file (printed), applied with --apply."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

import click

from recur_cli.apply import apply_file
from recur_cli.context import current
from recur_cli.importers.common import Imported, TaskMap, parse_maps

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
        apply_file(imported.apply_file(), err=True)


@click.group("import")
def import_group() -> None:
    """Bring jobs from another scheduler (prints an apply file; --apply applies it)."""


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

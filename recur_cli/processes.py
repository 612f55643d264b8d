"""`recur server`, `recur worker` and `recur manage`: Recur's processes where Recur is installed (pip install
recur), started from the directory a host runs them in. Each replaces itself with the process it starts
(exec), so a service manager's signals reach that process: `recur worker` is the worker.

    recur manage db upgrade                  # the database brought to this version's schema (before the rest)
    recur manage owners bootstrap            # the first admin and its token, shown once
    recur server --bind 0.0.0.0:5000         # gunicorn: two web processes of four threads (gunicorn's options)
    recur worker --concurrency 4             # one worker (its options: recur worker --help)

Settings come from the environment (docs/configuration.md); the team's tasks from its own installed packages,
named in RECUR_TASK_MODULES (e.g. acme.jobs). Nothing of the server is imported here: the server's modules run
in the processes started, after the host's metrics directory is set (recur.host_metrics)."""

from __future__ import annotations

import os
import sys

import click

from recur.host_metrics import use_host_directory

_PASS_ON = {"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []}


def _become(*argv: str) -> None:
    use_host_directory()  # before the server's modules import prometheus-client, in the process exec'd
    os.execv(sys.executable, [sys.executable, *argv])


@click.command("server", context_settings=_PASS_ON)
@click.argument("options", nargs=-1, type=click.UNPROCESSED)
def server(options: tuple[str, ...]) -> None:
    """Serve the API and the console with gunicorn: OPTIONS are gunicorn's (--bind, --workers, ...)."""
    _become("-m", "gunicorn", "-c", "python:recur_server.processes.gunicorn_conf", *options,
            "recur_server.processes.wsgi:app")


@click.command("worker", context_settings=_PASS_ON)
@click.argument("options", nargs=-1, type=click.UNPROCESSED)
def worker(options: tuple[str, ...]) -> None:
    """Run one worker: OPTIONS are the worker's (recur worker --help)."""
    _become("-m", "recur.worker", *options)


@click.command("manage", context_settings=_PASS_ON)
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def manage(command: tuple[str, ...]) -> None:
    """The server's own commands, on its database and Redis (flask's: db upgrade, owners bootstrap, tokens
    create, declarations sync, recover; recur manage --help lists them)."""
    _become("-m", "flask", "--app", "recur_server:create_app", *command)

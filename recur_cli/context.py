"""What every command shares: the API client, the output mode, and the exit codes (0 ok, 1 the API said
no or could not be reached, 2 usage)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from recur_cli import output
from recur_cli.client import ApiError, Client

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_URL = "http://127.0.0.1:5000"


@dataclass
class Context:
    url: str
    token: str | None
    json: bool = False
    _client: Client | None = None

    @property
    def client(self) -> Client:
        if self._client is None:
            self._client = Client(self.url, self.token)
        return self._client


def current() -> Context:
    return click.get_current_context().find_object(Context)  # type: ignore[return-value]


def json_option(command: F) -> F:
    """`--json` on a leaf command too (`recur schedules list --json`), not only before the noun."""

    def remember(ctx: click.Context, _: click.Parameter, value: bool) -> bool:
        obj = ctx.find_object(Context)
        if value and obj is not None:
            obj.json = True
        return value

    return click.option("--json", "as_json", is_flag=True, expose_value=False, callback=remember,
                        help="Print the API's JSON answer.")(command)


class ApiGroup(click.Group):
    """A group whose commands turn an ApiError into its message on stderr and exit status 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ApiError as exc:
            obj = ctx.find_object(Context)
            if obj is not None and obj.json and exc.body is not None:
                click.echo(json.dumps(exc.body, indent=2), err=True)
            else:
                click.echo(f"error: {exc}", err=True)
            ctx.exit(1)


def parse_json_option(value: str | None, name: str) -> Any:
    """A JSON value given on the command line, or `@path` to read it from a file."""
    if value is None:
        return None
    raw = value
    if value.startswith("@"):
        try:
            with open(value[1:], encoding="utf-8") as fh:
                raw = fh.read()
        except OSError as exc:
            raise click.BadParameter(str(exc), param_hint=name) from None
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint=name) from None


def emit(answer: Any, human: Callable[[], None]) -> None:
    """The API's JSON answer with --json; otherwise what `human` prints."""
    if current().json:
        output.emit_json(answer)
    else:
        human()


def page_options(command: F) -> F:
    """--limit, --offset and --cursor of a list command (its function takes `limit`, `offset`, `cursor`)."""
    command = click.option("--cursor", default=None, help="Start after the page that printed this cursor.")(command)
    command = click.option("--offset", type=int, default=None,
                           help="Skip this many (at most 10,000 deep; deeper: --cursor).")(command)
    return click.option("--limit", type=int, default=None, help="How many to show (default: the API's, 50).")(command)

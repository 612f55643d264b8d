"""The `recur` command line covers the API: every operation of the OpenAPI document has a row in docs/cli.md's
table, every command a row names exists, every command takes --json, and click's shell completion works.
A new API operation without a command (or its row) turns this red."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator

import click
import pytest

from harness.servers import ROOT
from recur_cli.main import cli

ROW = re.compile(r"^\| `(GET|POST|PATCH|PUT|DELETE) (/[^`]*)` \| (.*) \|$")
# Commands whose output is not an API answer: an importer prints the apply file it made (YAML, for a person
# to read before --apply), and the apply it runs then follows the top-level `recur --json`.
# `recur server`, `recur worker` and `recur manage` start Recur's processes where it is installed: no API
# answer to print.
NOT_JSON = {("import",), ("server",), ("worker",), ("manage",)}


def _table() -> dict[tuple[str, str], list[str]]:
    rows: dict[tuple[str, str], list[str]] = {}
    for line in (ROOT / "docs" / "cli.md").read_text().splitlines():
        match = ROW.match(line)
        if match:
            method, path, commands = match.groups()
            rows[(method, path)] = re.findall(r"`(recur [^`]*)`", commands)
    return rows


def _operations(app) -> set[tuple[str, str]]:  # type: ignore[no-untyped-def]
    """The document's operations, paths as the table writes them: /api/v1 left off, the first parameter
    written {id} (`/schedules/{schedule_id}/runs/{run_id}/` is `/schedules/{id}/runs/{run_id}/`)."""
    document = app.test_client().get("/api/openapi.json").get_json()
    return {(method.upper(), re.sub(r"\{[^}]+\}", "{id}", path.removeprefix("/api/v1"), count=1))
            for path, item in document["paths"].items() for method in item
            if method in ("get", "post", "patch", "put", "delete")}


def _leaves(command: click.Command, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from _leaves(sub, (*path, name))
    else:
        yield path, command


def _resolve(words: list[str]) -> click.Command | None:
    """The command `recur WORDS...` runs (arguments and options after it ignored), or None."""
    command: click.Command = cli
    for word in words:
        if not isinstance(command, click.Group) or word not in command.commands:
            break
        command = command.commands[word]
    return None if isinstance(command, click.Group) else command


def test_every_api_operation_has_a_command_in_the_table(app):
    table = _table()
    assert set(_operations(app)) - set(table) == set(), "API operations with no row in docs/cli.md's table"
    assert set(table) - _operations(app) == set(), "rows of docs/cli.md's table that name no API operation"
    for operation, commands in table.items():
        assert commands, f"{operation}: the row names no command"
        for text in commands:
            assert _resolve(text.split()[1:]) is not None, f"{operation}: `{text}` is not a command of recur"


# API fields a command takes under another name: an id by the object's id or name, a list one per option,
# an object as options of its parts (--follow, --follow-on ... for after), a Python keyword as another, what
# an apply changes as the file `recur apply` reads.
CARRIED_BY = {"workflow_id": "workflow", "calendar_id": "calendar", "event_types": "events", "quotas": "schedules",
              "after": "follow", "from": "start", "to": "end", "workflows": "path", "webhooks": "path",
              "calendars": "path", "schedules": "path", "file": "path"}


def test_every_field_of_an_operation_is_an_option_of_its_command(app):
    """Each query parameter and body property of an operation is an option of the command its row names
    first, so a new field of the API needs its option (or a row naming another command)."""
    document = app.test_client().get("/api/openapi.json").get_json()
    table, missing = _table(), []
    for path, item in document["paths"].items():
        for method, operation in item.items():
            key = (method.upper(), re.sub(r"\{[^}]+\}", "{id}", path.removeprefix("/api/v1"), count=1))
            if key not in table:
                continue  # the test above says so
            command = _resolve(table[key][0].split()[1:])
            assert command is not None
            names = {param.name for param in command.params}
            fields = [p["name"] for p in operation.get("parameters", []) if p.get("in") == "query"]
            body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
            if "$ref" in body:
                fields += list(document["components"]["schemas"][body["$ref"].rsplit("/", 1)[1]].get("properties", {}))
            missing += [f"{table[key][0]}: {field}" for field in fields if CARRIED_BY.get(field, field) not in names]
    assert missing == []


def test_every_command_takes_json():
    leaves = list(_leaves(cli))
    assert len(leaves) > 40
    for path, command in leaves:
        if path[:1] in NOT_JSON:
            continue
        options = {name for param in command.params for name in getattr(param, "opts", [])}
        assert "--json" in options, f"recur {' '.join(path)} has no --json"


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_shell_completion_comes_from_click(shell):
    """As docs/cli.md says to enable it: `eval "$(_RECUR_COMPLETE=bash_source recur)"`."""
    env = {**os.environ, "_RECUR_COMPLETE": f"{shell}_source"}
    recur = ROOT / ".venv" / "bin" / "recur"  # the console script pyproject.toml declares
    script = subprocess.run([str(recur)], env=env, capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert script.returncode == 0 and "_RECUR_COMPLETE" in script.stdout, script


def test_completion_offers_nouns_verbs_and_options():
    def complete(words: str) -> list[str]:
        env = {**os.environ, "_RECUR_COMPLETE": "bash_complete", "COMP_WORDS": words,
               "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1))}
        done = subprocess.run([sys.executable, "-m", "recur_cli"], env=env, capture_output=True, text=True,
                              timeout=60, cwd=ROOT)
        assert done.returncode == 0, done
        return [line.split(",", 1)[1] for line in done.stdout.splitlines()]

    assert "webhooks" in complete("recur web")
    assert set(complete("recur webhooks ")) >= {"create", "list", "show", "edit", "delete", "deliveries",
                                                "redeliver"}
    assert "--json" in complete("recur tokens list --")

"""Reading an apply file: YAML with `workflows` (matched by name), `schedules` (matched by `key`), `webhooks`
(matched by `url`) and `calendars` (matched by name), sent as JSON to POST /apply/file/, which checks it
(recur_server.schemas.apply.FileIn) and plans it against the owner's objects (recur_server.declarations.file)."""

from __future__ import annotations

from typing import Any

import yaml

from recur_cli.filetypes import FileError, jsonable


def load(text: str, source: str = "the file") -> dict[str, Any]:
    """The file as JSON: YAML's own types (a date, a time) written as ISO 8601."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise FileError(f"{source} is not valid YAML: {exc}") from None
    if document is None:
        document = {}
    if not isinstance(document, dict):
        raise FileError(f"{source}: the top level must be a mapping with `workflows` and `schedules`")
    return dict(jsonable(document))

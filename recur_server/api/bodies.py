"""Reading a JSON request body into values every later layer can hold: parse it without a RecursionError,
then refuse what the databases cannot store (NUL characters, unpaired surrogates, NaN and Infinity) and
nesting deeper than MAX_JSON_DEPTH, naming the top-level field each problem sits in.

The size limit (413) is Flask's MAX_CONTENT_LENGTH, applied when the body is read.
"""

from __future__ import annotations

import json
import math
from typing import Any

from flask import request

from recur_server.api.errors import ApiError

# The body object is level 1; a trigger_payload may nest up to 62 levels inside it. Deeper documents
# are refused (422) before anything walks them recursively (marshmallow, the JSON column, jsonify).
MAX_JSON_DEPTH = 64
_MAX_PROBLEMS = 20  # an error body names this many problems at most


def json_object() -> dict[str, Any]:
    """The request body as a JSON object whose values are safe to store; ApiError (400/413/422) otherwise."""
    if not request.is_json:
        raise ApiError(400, "bad_request", "The body must be a JSON object (Content-Type: application/json).")
    raw = request.get_data(cache=True)  # raises RequestEntityTooLarge (413) past MAX_CONTENT_LENGTH
    try:
        payload = json.loads(raw)
    except RecursionError:
        raise ApiError(400, "bad_request", f"The body is nested too deeply: at most {MAX_JSON_DEPTH} levels.") from None
    except ValueError:  # includes UnicodeDecodeError and integers too long to read
        raise ApiError(400, "bad_request", "The body is not valid JSON.") from None
    if not isinstance(payload, dict):
        raise ApiError(400, "bad_request", "The body must be a JSON object (Content-Type: application/json).")
    problems = storable_problems(payload)
    if problems:
        raise ApiError(422, "validation_error", "The request body is invalid.", problems)
    return payload


def storable_problems(document: dict[str, Any]) -> dict[str, list[str]]:
    """{top-level field: [problem at path]} for every value that cannot be stored as it is. Iterative, so
    a deep document costs no recursion; each field is reported once (its first problem)."""
    problems: dict[str, list[str]] = {}
    stack: list[tuple[Any, str, str, int]] = [(value, str(key), str(key), 2) for key, value in document.items()]
    for key in document:
        _check_text(key, str(key), str(key), problems)
    while stack and len(problems) < _MAX_PROBLEMS:
        value, field, path, depth = stack.pop()
        if field in problems:
            continue
        if isinstance(value, (dict, list)) and depth >= MAX_JSON_DEPTH:
            problems[field] = [f"nested too deep: at most {MAX_JSON_DEPTH} levels in the whole body (at {path})"]
        elif isinstance(value, dict):
            for key, item in value.items():
                _check_text(key, field, f"{path}.{key}", problems)
                stack.append((item, field, f"{path}.{key}", depth + 1))
        elif isinstance(value, list):
            stack.extend((item, field, f"{path}.{index}", depth + 1) for index, item in enumerate(value))
        elif isinstance(value, str):
            _check_text(value, field, path, problems)
        elif isinstance(value, float) and not math.isfinite(value):
            problems[field] = [f"NaN and Infinity are not JSON numbers (at {path})"]
    return problems


def _check_text(text: str, field: str, path: str, problems: dict[str, list[str]]) -> None:
    """PostgreSQL refuses NUL in text; neither database can encode a lone surrogate (\\ud800) as UTF-8."""
    if field in problems:
        return
    if "\x00" in text:
        problems[field] = [f"must not contain NUL characters (U+0000) (at {_shown(path)})"]
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        problems[field] = [f"must not contain unpaired surrogates (U+D800 to U+DFFF) (at {_shown(path)})"]


def _shown(path: str) -> str:
    """The path for a message: printable, and short."""
    text = path.encode("unicode_escape").decode("ascii")
    return text if len(text) <= 100 else text[:97] + "..."

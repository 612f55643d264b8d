"""A marshmallow error as the API, the console's forms and a declarations sync name it: one message list per
field, by dotted path."""

from __future__ import annotations

from typing import Any


def field_errors(errors: Any, prefix: str = "") -> dict[str, list[str]]:
    """marshmallow nests errors for nested fields and lists; the API names each field by a dotted path."""
    flat: dict[str, list[str]] = {}
    if isinstance(errors, dict):
        for key, value in errors.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            if isinstance(value, dict):
                flat.update(field_errors(value, name))
            elif isinstance(value, list):
                flat[name] = [str(v) for v in value]
            else:
                flat[name] = [str(value)]
    else:
        flat[prefix or "_schema"] = [str(errors)]
    return flat

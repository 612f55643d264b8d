"""Recur: recurring jobs as self-rescheduling RQ chains. `create_app` (recur_server.factory) wires everything
explicitly; it is imported on first use, so a process that needs only part of the server (gunicorn's master,
which reads its settings and worker class before any web process starts; a `recur` command) does not import
the whole of it."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from recur_server.factory import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":  # `from recur_server import create_app`, `flask --app recur_server:create_app`
        return importlib.import_module("recur_server.factory").create_app
    raise AttributeError(f"module 'recur_server' has no attribute {name!r}")

"""The URL builders of Flask's routes, compiled once per test process rather than once per app.

Each route of an app gets two URL-building functions that werkzeug writes as Python source and compiles
(`Rule._compile_builder`): 20 of the 33 ms of CPU `create_app` costs, and the suite makes about 2,000 apps in
its own processes, so about 40 CPU-s of a run. What a builder does depends only on the rule's parsed parts (its
`_trace`), its defaults and whether it appends unknown arguments; it reaches the rule's own converters through
its first argument at call time. `install()` keeps each builder by those, and a rule of a later app with the
same ones gets the same function (bound to itself by werkzeug, as before). Only the tests' own process installs
it: the web and worker processes they start build their routes as werkzeug writes them.

tests/test_route_builders.py checks that every route of an app builds the same URLs with and without it, and
fails if werkzeug's method changes its signature (werkzeug 3.1; pyproject.toml pins the range).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from werkzeug.routing.rules import Rule

_original: Callable[..., Any] | None = None
SIGNATURE = "(self, append_unknown: 'bool' = True) -> 't.Callable[..., tuple[str, str]]'"


def install() -> None:
    global _original
    if _original is not None:
        return
    original = Rule._compile_builder
    if str(inspect.signature(original)) != SIGNATURE:
        return  # a werkzeug this was not written for: build as it does
    built: dict[tuple[Any, ...], Callable[..., Any]] = {}

    def compile_builder(self: Rule, append_unknown: bool = True) -> Callable[..., Any]:
        defaults = self.defaults or {}
        try:
            key = (self.rule, tuple(self._trace), tuple(sorted(defaults.items())), append_unknown)
            hash(key)
        except TypeError:
            return original(self, append_unknown)
        if key not in built:
            built[key] = original(self, append_unknown)
        return built[key]

    _original = original
    Rule._compile_builder = compile_builder  # type: ignore[method-assign]


def installed() -> bool:
    return _original is not None


def original() -> Callable[..., Any] | None:
    """werkzeug's own method while install() has replaced it."""
    return _original


def uninstall() -> None:
    global _original
    if _original is not None:
        Rule._compile_builder = _original  # type: ignore[method-assign]
        _original = None

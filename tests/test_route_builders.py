"""harness/route_builders.py: the tests' process keeps werkzeug's compiled URL builders across apps; every route
of an app must build the same URLs with them as without, and werkzeug's method must still be the one it wraps."""

from __future__ import annotations

import inspect
from collections.abc import Iterator

import pytest
from flask import Flask
from werkzeug.routing import IntegerConverter
from werkzeug.routing.rules import Rule

from harness import route_builders
from recur_server import create_app


def _urls(app: Flask) -> dict[str, tuple[str, str]]:
    """Each rule's URL for sample values of its arguments, bare and with an unknown argument appended."""
    adapter = app.url_map.bind("recur.example", url_scheme="https")
    urls = {}
    for rule in app.url_map.iter_rules():
        values = {name: 7 if isinstance(converter, IntegerConverter) else "a b/é"
                  for name, converter in rule._converters.items()}
        method = sorted(rule.methods or {"GET"})[0]
        urls[f"{rule.rule} {method}"] = (
            adapter.build(rule.endpoint, values, method=method),
            adapter.build(rule.endpoint, {**values, "extra": "x&y"}, method=method, force_external=True),
        )
    return urls


@pytest.fixture
def without_cache() -> Iterator[None]:
    installed = route_builders.installed()
    route_builders.uninstall()
    yield
    if installed:
        route_builders.install()


def test_the_kept_builders_build_what_werkzeugs_own_build(without_cache: None) -> None:
    config = {"TESTING": True, "DATABASE_URL": "sqlite:///unused.db", "REDIS_URL": "redis://unused"}
    plain = _urls(create_app(config))
    route_builders.install()
    first, second = _urls(create_app(config)), _urls(create_app(config))  # the second app's builders are kept ones
    assert len(plain) > 50 and plain == first == second
    assert any("%20b/%C3%A9" in bare or "a%20b%2F%C3%A9" in bare for bare, _ in plain.values())
    assert all("extra=x%26y" in full for _, full in plain.values())


def test_werkzeugs_builder_method_is_still_the_one_wrapped() -> None:
    original = route_builders.original() or Rule._compile_builder
    assert str(inspect.signature(original)) == route_builders.SIGNATURE

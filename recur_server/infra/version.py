"""Recur's version, from one place: the `version` of pyproject.toml, as the installed distribution (a wheel,
or a checkout's editable install) records it. The API's health, the console and `recur --version` show it."""

from __future__ import annotations

from functools import cache
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as distribution_version


@cache
def version() -> str:
    try:
        return distribution_version("recur")
    except PackageNotFoundError:  # the sources on sys.path without being installed
        return "0+unknown"

"""A copy of the checkout as `scripts/up` runs from it, for the tests that run Recur the way a user does."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

from harness.servers import ROOT


def copy_of_the_checkout(dest: Path) -> Path:
    """What `scripts/up` runs from, without the virtualenv (linked: nothing is installed) or local state."""
    shutil.copytree(ROOT, dest, symlinks=True, ignore=shutil.ignore_patterns(
        ".venv", ".git", "instance", "site", "tests", "harness", "bench", "docs", "__pycache__", "*.egg-info",
        ".*_cache", ".hypothesis", ".schemathesis", "mytasks*"))
    (dest / ".venv").symlink_to(ROOT / ".venv")
    return dest


def project_version() -> str:
    """The version pyproject.toml gives, its one source: what every installed or running Recur must show."""
    return str(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"])

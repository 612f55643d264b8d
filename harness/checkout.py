"""A copy of the checkout as `scripts/up` runs from it, for the tests that run Recur the way a user does."""

from __future__ import annotations

import shutil
from pathlib import Path

from harness.servers import ROOT


def copy_of_the_checkout(dest: Path) -> Path:
    """What `scripts/up` runs from, without the virtualenv (linked: nothing is installed) or local state."""
    shutil.copytree(ROOT, dest, symlinks=True, ignore=shutil.ignore_patterns(
        ".venv", ".git", "instance", "site", "tests", "harness", "bench", "docs", "__pycache__", "*.egg-info",
        ".*_cache", ".hypothesis", ".schemathesis", "mytasks*"))
    (dest / ".venv").symlink_to(ROOT / ".venv")
    return dest

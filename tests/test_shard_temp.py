"""Each shard scripts/test starts keeps its temporary directories under a root of its own
(PYTEST_DEBUG_TEMPROOT). pytest cleans up old numbered directories and `garbage-*` ones under its root as a
session ends; eight shards ending one after another under one shared /tmp/pytest-of-root ran that cleanup
at once, and one shard's cleanup locked a `garbage-*` directory another was removing: "Directory not
empty", a PytestWarning, and (warnings being errors here) a failed shard after all its tests passed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.passes import this_pass


def test_a_shard_keeps_its_temporary_directories_under_a_root_of_its_own(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    shard = os.environ.get("RECUR_TEST_SHARD")
    if not shard:
        pytest.skip("not a shard of scripts/test")
    root = os.environ.get("PYTEST_DEBUG_TEMPROOT")
    assert root, "a shard without a temporary root of its own shares /tmp/pytest-of-<user> with the others"
    assert Path(root).name == f"{this_pass()}{shard.split('/')[0]}", root
    assert Path(tmp_path_factory.getbasetemp()).is_relative_to(root)

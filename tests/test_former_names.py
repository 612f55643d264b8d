"""Jobs queued in Redis by a version whose server package was `app` (before 0.2.0) name their functions by
those names: a worker answers to them, and to nothing else of the former package."""

from __future__ import annotations

import sys

import pytest
from rq.utils import import_attribute

from recur_server.chain.link import run_link
from recur_server.chain.outside import run_outside
from recur_server.processes.former_names import FORMER, answer_to_former_names


def test_the_functions_queued_jobs_name_are_found_under_their_former_names() -> None:
    try:
        answer_to_former_names()
        assert import_attribute("app.chain.link.run_link") is run_link
        assert import_attribute("app.chain.outside.run_outside") is run_outside
        assert "app" not in sys.modules  # a team's own package named app is still free to load
        with pytest.raises((ImportError, KeyError, ValueError)):  # as rq fails on a name that is not there
            import_attribute("app.services.schedules.create")
    finally:
        for name in FORMER:
            sys.modules.pop(name, None)

"""harness/stack.py's wait_workers_ready waits for every slot a worker starts with, not only its first: a test
that stops Redis once a worker is "ready" (tests/test_integration.py's stop while Redis is away) otherwise
catches a slot still starting, which then dies on the refused connection with a traceback."""

from __future__ import annotations

from recur_server.workers.slots import default_concurrency


def test_a_worker_is_ready_once_every_slot_it_starts_with_listens(stack):
    worker = stack.start_worker(slots=None)  # the worker's default: four
    stack.wait_workers_ready()
    assert worker.output().count("Listening on") == default_concurrency(0)


def test_a_worker_of_one_slot_is_ready_once_it_listens(stack):
    worker = stack.start_worker("--concurrency", "1")
    stack.wait_workers_ready()
    assert worker.output().count("Listening on") == 1

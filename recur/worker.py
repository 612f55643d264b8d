"""One Recur worker: `recur worker [options]` runs `python -m recur.worker`, a checkout's `python worker.py` runs
the same (recur_server/processes/worker.py has the options). The server's modules are imported after
recur.starting, so the worker starts with the host's metrics directory and without the collector's passes over
what it imports."""

from __future__ import annotations

from recur.starting import starting


def run() -> None:
    starting()
    from recur_server.processes.worker import main  # after starting(): see recur.starting

    main()


if __name__ == "__main__":
    run()

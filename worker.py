"""Run one Recur worker from a checkout: `python worker.py [options]`, as `recur worker [options]` does where
Recur is installed (recur_server/processes/worker.py has the options)."""

from recur.host_metrics import use_host_directory

use_host_directory()  # before the server's modules import prometheus-client

from recur_server.processes.worker import main  # noqa: E402

if __name__ == "__main__":
    main()

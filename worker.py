"""Run one Recur worker from a checkout: `python worker.py [options]`, as `recur worker [options]` does where
Recur is installed (recur_server/processes/worker.py has the options)."""

from recur.worker import run

if __name__ == "__main__":
    run()

"""The name the RQ jobs of runs outside the chain carry (recur_server.services.outside_runs.queueing.OUTSIDE_FUNC): jobs
already queued in Redis name recur_server.chain.outside.run_outside, so it stays importable here. The job function
itself is recur_server.jobs.run_outside; the runs are recur_server.services.outside_runs."""

from recur_server.jobs import run_outside

__all__ = ["run_outside"]

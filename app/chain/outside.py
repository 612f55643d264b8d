"""The name the RQ jobs of runs outside the chain carry (app.services.outside_runs.queueing.OUTSIDE_FUNC): jobs
already queued in Redis name app.chain.outside.run_outside, so it stays importable here. The job function
itself is app.jobs.run_outside; the runs are app.services.outside_runs."""

from app.jobs import run_outside

__all__ = ["run_outside"]

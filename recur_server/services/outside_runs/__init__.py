"""Runs outside the chain: a manual trigger and the runs of a backfill, each carried out as its own RQ job.

Each is its own RQ job (ID `recur-run-{run_id}-w{attempt}`), never a link: it takes no tick of the
chain, does not count against total_repeats and leaves next_run_at alone. Its Run row, keyed by the
run's own ID, is inserted when it starts, so a job that runs twice (a retried request, a copy) starts
one run. The overlap policy (the schedule's, or the one the request gave) and the workflow's
concurrency limit apply as they do to a tick. A run that must wait is parked (WAITING_KEY, oldest first)
and its job ends: parked runs cost Redis nothing while they wait, and one pass at a time (start_waiting:
the background loop's, once a second, and one after each outside run ends) starts those that now may,
in order, each as its next attempt. So waiting costs a bounded number of Redis commands a second however
many runs wait. Runs that have started are listed in Redis (OUTSIDE_KEY) with their job IDs, so that
cancel_other can stop them and the reconciler can write off one whose worker died; runs whose job is
queued but not started yet are listed in QUEUED_KEY, so that the reconciler can tell a backfill whose
next run is on its way from one whose next run was lost.
"""

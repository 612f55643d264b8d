"""The chain: a link's life, read in the order it is lived.

ids (a link's job ID) -> claim (the fence and the policies at the tick's start: concurrency, gaps,
breaker) -> run (prepare, execute the task's attempt, complete) -> finish (record the outcome;
outcome holds the rules, finish_events what it tells the world) -> handoff (the successor link, from the
committed row; planning makes it). rows holds the statements the claim and the finish run.
The Redis side: redis_links (put, cancel, look up pending links), mover (due links onto the queue),
leases, running (runs listed outside the schedule lease). follow writes the triggers of the schedules that
follow this one. The RQ workers that live these links are recur_server.workers.
Runs outside the chain (manual, backfill) are recur_server.services.outside_runs, beside it.
"""

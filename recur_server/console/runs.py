"""A run's own page: its fields, its error's traceback, the task's captured output and log lines, and its
return value, each as kept (within RECUR_RUN_OUTPUT_BYTES, head and tail). Read through the same scoped
lookup as the API's GET of one run."""

from __future__ import annotations

from flask import abort, current_app, render_template

from recur_server.console import session, times
from recur_server.console.views import Page, console
from recur_server.services import queries


@console.get("/schedules/<schedule_id>/runs/<run_id>")
@session.signed_in
def run_page(schedule_id: str, run_id: str) -> Page:
    schedule = queries.owned_schedule(schedule_id)
    if schedule is None:
        abort(404, description=f"schedule {schedule_id} does not exist")
    run = queries.run_detail(schedule, run_id)
    if run is None:
        abort(404, description=f"run {run_id} does not exist")
    return render_template("run.html", s=schedule, r=run, zone=times.view_zone(schedule.timezone),
                           limit=current_app.config["RECUR_RUN_OUTPUT_BYTES"])

"""The console's pages. Each one reads through recur_server.services.queries (scoped to the signed-in owner) and changes
things through recur_server.services.schedules, the service the API uses; nothing here decides what the API would
not."""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote, urlsplit
from zoneinfo import ZoneInfo

from flask import Blueprint, Response, abort, current_app, flash, redirect, render_template, request, url_for
from redis.exceptions import RedisError
from werkzeug.wrappers import Response as BaseResponse

from recur_server.auth.scope import caller
from recur_server.console import chart, explaining, forms, session, times
from recur_server.infra import clock, cursors
from recur_server.infra.extensions import db
from recur_server.infra.version import version
from recur_server.models import Schedule, ScheduleStatus, Workflow
from recur_server.policies.condition import FAILED_OUTCOMES, Condition, condition
from recur_server.schemas.workflows import WorkflowIn
from recur_server.services import follow, history, known_tasks, queries, quotas, schedules, workflows
from recur_server.services.outside_runs import requests
from recur_server.services.overdue import overdue_seconds
from recur_server.tasks import task_names
from recur_server.timing import iso

console = Blueprint("console", __name__, template_folder="templates", static_folder="static",
                    static_url_path="/console/static")
PAGE = 25
STRIP = 20  # runs in each row's strip
Page = str | BaseResponse | tuple[str, int]


@console.before_request
def _before() -> None:
    session.load_owner()
    session.check_csrf()


@console.app_template_global()
def csrf_token() -> str:
    return session.csrf_token()


console.add_app_template_global(version, "recur_version")


@console.app_template_filter("when")
def _when(instant: datetime | None, zone: str | None = None) -> str:
    if instant is None:
        return "-"
    if instant.tzinfo is None:  # RQ's own stamps are naive UTC
        instant = instant.replace(tzinfo=UTC)
    local = instant.astimezone(ZoneInfo(zone)) if zone else instant.astimezone(UTC)
    return local.strftime("%Y-%m-%d %H:%M:%S") + (f" {local.tzname()}" if zone else " UTC")


@console.app_template_filter("iso")
def _iso(instant: datetime | None) -> str:
    return "" if instant is None else iso(instant)


@console.app_template_filter("seconds")
def _seconds(value: float | None) -> str:
    return "-" if value is None else chart.seconds_text(value)


# --- signing in ----------------------------------------------------------------------------------

@console.route("/signin", methods=["GET", "POST"])
def signin() -> Page:
    error = None
    if request.method == "POST":
        owner = session.sign_in(request.form.get("token", ""))
        if owner is not None:
            target = request.args.get("next") or ""
            return redirect(target if _on_this_site(target) else url_for("console.home"))
        error = "That token is unknown, revoked or expired."
    return render_template("signin.html", error=error), 401 if error else 200


def _on_this_site(target: str) -> bool:
    """Whether `target` is a path on this site, read as a browser might read it: no scheme or host, no `//`
    start, no backslash (browsers read it as `/`), no whitespace or control character (browsers drop tabs and
    newlines, so `/<tab>/evil.example` is `//evil.example`), and the same once percent-decoded (where only
    an escaped space, `%20`, may stay: it is part of many a path)."""
    for form, space in ((target, ""), (unquote(target), " ")):
        if not form.startswith("/") or form.startswith("//") or "\\" in form:
            return False
        if any(c not in space and (c.isspace() or unicodedata.category(c) in ("Cc", "Cf")) for c in form):
            return False
        parts = urlsplit(form)
        if parts.scheme or parts.netloc:
            return False
    return True


@console.post("/signout")
def signout() -> BaseResponse:
    session.sign_out()
    return redirect(url_for("console.signin"))


@console.get("/")
def home() -> BaseResponse:
    return redirect(url_for("console.schedule_list"))


# --- schedules -----------------------------------------------------------------------------------

@console.get("/schedules")
@session.signed_in
def schedule_list() -> Page:
    filters = queries.ScheduleFilter(
        status=request.args.get("status") or None,
        workflow_id=request.args.get("workflow", type=int),
        text=(request.args.get("q") or "").strip() or None,
    )
    after = _after(queries.SCHEDULES)
    found = queries.schedule_page(filters, PAGE, after=after)
    rows = found.items
    strips = queries.recent_outcomes([s.id for s in rows], STRIP)
    flows = {w.id: w for w in queries.workflows()}
    names = {w.id: w.name for w in flows.values()}
    now = clock.utcnow()
    items = [{"schedule": s, "description": queries.timing_text(s), "runs": strips.get(s.id, []),
              "workflow": names.get(s.workflow_id, s.workflow_id),
              "condition": _condition(s, flows.get(s.workflow_id), strips.get(s.id, []), now)} for s in rows]
    return render_template("schedules.html", items=items, total=found.total, total_capped=found.total_capped,
                           older=found.next, newest=after is not None, filters=filters, workflows=names,
                           statuses=[s.value for s in ScheduleStatus])


def _condition(schedule: Schedule, workflow: Workflow | None, recent: list[queries.Outcome],
               now: datetime) -> Condition:
    """What is wrong with the schedule at `now`, first (its newest runs oldest first, as recent_outcomes gives
    them)."""
    breaker = workflow.breaker_state if workflow is not None and workflow.breaker_threshold is not None else None
    ran = [r.status for r in recent if r.status in ("succeeded", *FAILED_OUTCOMES)]
    long = any(r.status == "running" and r.long_alerted for r in recent)
    return condition(schedule.status, schedule.health, breaker, ran[-1] if ran else None,
                     failing_alert=schedule.failing_since is not None, running_long=long,
                     overdue=overdue_seconds(schedule, now) is not None)


def _after(order: queries.Order) -> Any:
    """The position of a list's "Older" link (its `after`); a cursor not ours shows the newest page."""
    try:
        return cursors.decode(request.args.get("after", ""), order.shape)
    except ValueError:
        return None


@console.get("/schedules/<schedule_id>")
@session.signed_in
def schedule_page(schedule_id: str) -> Page:
    schedule = _owned(schedule_id)
    now = clock.utcnow()
    upcoming = queries.upcoming(schedule, now)
    after = _after(queries.RUNS)
    found = queries.run_page(schedule, PAGE, after=after)
    recent = queries.recent_runs([schedule.id], per_schedule=60)[schedule.id]
    outcomes = [queries.Outcome(r.scheduled_for, r.status, r.long_alerted_at is not None) for r in recent]
    points = [chart.Point(r.scheduled_for, (r.started_at - r.scheduled_for).total_seconds(),
                          (r.finished_at - r.started_at).total_seconds() if r.finished_at else None, r.status)
              for r in recent]
    workflow = db.session.get(Workflow, schedule.workflow_id)
    return render_template("schedule.html", s=schedule, description=queries.timing_text(schedule), upcoming=upcoming,
                           condition=_condition(schedule, workflow, outcomes, now),
                           runs=found.items, total=found.total, total_capped=found.total_capped,
                           older=found.next, newest=after is not None,
                           chart=chart.timeline(points, zone=times.view_zone(schedule.timezone)), workflow=workflow,
                           stats=history.stats(schedule), follows=follow.neighbours(schedule),
                           warnings=known_tasks.warnings_for(schedule, now),
                           explained=explaining.explained(schedule, times.view_zone(schedule.timezone)))


@console.route("/schedules/new", methods=["GET", "POST"])
@session.signed_in
def schedule_new() -> Page:
    values: dict[str, Any] = forms.form_values(None)
    errors: dict[str, list[str]] = {}
    if request.method == "POST":
        values = request.form.to_dict()
        body, errors = forms.body_from_form(request.form)
        data, schema_errors = forms.validated(body)
        errors |= schema_errors
        if not errors:
            data["owner_id"] = caller().id
            schedule, errors = _serviced(schedules.create, data, clock.utcnow())
            if schedule is not None:
                flash(f"Created {schedule.name}.")
                return redirect(url_for("console.schedule_page", schedule_id=schedule.id))
    return _form("new", values, errors)


@console.route("/schedules/<schedule_id>/edit", methods=["GET", "POST"])
@session.signed_in
def schedule_edit(schedule_id: str) -> Page:
    schedule = _owned(schedule_id)
    values = forms.form_values(schedule)
    errors: dict[str, list[str]] = {}
    if request.method == "POST":
        values = request.form.to_dict()
        body, errors = forms.body_from_form(request.form)
        changed = forms.changed_fields(body, schedule) if not errors else {}
        data, schema_errors = forms.validated(changed, partial=True)
        errors |= schema_errors
        if not errors and not changed:
            flash("Nothing changed.")
            return redirect(url_for("console.schedule_page", schedule_id=schedule.id))
        if not errors:
            updated, errors = _serviced(schedules.update, schedule.id, data, clock.utcnow())
            if updated is not None:
                flash(f"Saved {', '.join(sorted(changed))}.")
                return redirect(url_for("console.schedule_page", schedule_id=schedule.id))
    return _form("edit", values, errors, schedule)


def _form(mode: str, values: dict[str, Any], errors: dict[str, list[str]], schedule: Any = None) -> Page:
    calendars = queries.calendars_of(schedule.owner_id if schedule is not None else caller().id)
    page = render_template("schedule_form.html", mode=mode, v=values, errors=errors, s=schedule,
                           workflows=queries.workflows(), calendars=calendars, kinds=forms.KINDS, choices=forms.CHOICES)
    return (page, 422) if errors else page


def _serviced(call: Any, *args: Any) -> tuple[Schedule | None, dict[str, list[str]]]:
    """Run a service call as the API does; its refusals become field errors."""
    try:
        return call(*args), {}
    except schedules.Invalid as exc:
        db.session.rollback()
        return None, exc.errors
    except schedules.DuplicateKey as exc:
        db.session.rollback()
        return None, {"key": [str(exc)]}
    except schedules.Conflict as exc:
        db.session.rollback()
        return None, {"_schema": [str(exc)]}
    except quotas.QuotaExceeded as exc:
        db.session.rollback()
        return None, {"_schema": [exc.message]}
    except RedisError:
        db.session.rollback()
        return None, {"_schema": ["Redis is unreachable; nothing was changed. Try again."]}


@console.post("/schedules/<schedule_id>/pause")
@session.signed_in
def schedule_pause(schedule_id: str) -> BaseResponse:
    note = (request.form.get("note") or "").strip() or None
    return _act(schedule_id, "Paused.", schedules.pause, clock.utcnow(), note)


@console.post("/schedules/<schedule_id>/resume")
@session.signed_in
def schedule_resume(schedule_id: str) -> BaseResponse:
    revived = _owned(schedule_id).status == "dead"
    return _act(schedule_id, "Revived." if revived else "Resumed.", schedules.resume, clock.utcnow())


def _act(schedule_id: str, done: str, call: Any, *args: Any) -> BaseResponse:
    schedule = _owned(schedule_id)
    _, errors = _serviced(call, schedule.id, *args)
    flash("; ".join(m for ms in errors.values() for m in ms) if errors else done)
    return redirect(url_for("console.schedule_page", schedule_id=schedule.id))


@console.post("/schedules/<schedule_id>/trigger")
@session.signed_in
def schedule_trigger(schedule_id: str) -> BaseResponse:
    schedule = _owned(schedule_id)
    try:
        run = requests.trigger(schedule, caller().id, clock.utcnow())
        flash(f"Triggered: run {run.run_id} starts now.")
    except RedisError:
        db.session.rollback()
        flash("Redis is unreachable; nothing was started. Try again.")
    return redirect(url_for("console.schedule_page", schedule_id=schedule.id))


@console.route("/schedules/<schedule_id>/backfill", methods=["GET", "POST"])
@session.signed_in
def schedule_backfill(schedule_id: str) -> Page:
    """First the list of nominal times (a dry run), then, confirmed, the backfill itself."""
    schedule = _owned(schedule_id)
    values = {"start": request.form.get("start", ""), "end": request.form.get("end", "")}
    errors: dict[str, list[str]] = {}
    times: list[datetime] | None = None
    if request.method == "POST":
        data, errors = forms.validated_backfill(values)
        if not errors:
            try:
                times = requests.backfill_times(schedule, data["start"], data["end"])
            except requests.TooMany:
                errors = {"end": [f"more than {requests.MAX_BACKFILL_TIMES} nominal times; backfill in parts."]}
            except Exception as exc:
                errors = {"_schema": [f"The schedule's timing is invalid: {exc}"]}
        if not errors and times and request.form.get("confirm"):
            try:
                requests.start_backfill(schedule, data["start"], data["end"], times, None, clock.utcnow())
            except RedisError:
                db.session.rollback()
                errors = {"_schema": ["Redis is unreachable; nothing was started. Try again."]}
            else:
                flash(f"Backfill of {len(times)} runs started.")
                return redirect(url_for("console.schedule_page", schedule_id=schedule.id))
    page = render_template("backfill.html", s=schedule, v=values, errors=errors, times=times)
    return (page, 422) if errors else page


@console.route("/schedules/<schedule_id>/delete", methods=["GET", "POST"])
@session.signed_in
def schedule_delete(schedule_id: str) -> Page:
    schedule = _owned(schedule_id)
    if request.method == "GET":
        return render_template("confirm_delete.html", s=schedule)
    schedules.remove([schedule.id], clock.utcnow())
    flash(f"Deleted {schedule.name}.")
    return redirect(url_for("console.schedule_list"))


@console.post("/preview")
@session.signed_in
def preview() -> Response:
    """The live preview of the form: the API's own preview view, answered as it answers (JSON)."""
    preview_view: Any = current_app.view_functions["api.schedule_preview"]
    answer: Response = preview_view()
    return answer


def _owned(schedule_id: str) -> Schedule:
    schedule = queries.owned_schedule(schedule_id)
    if schedule is None:
        abort(404, description=f"schedule {schedule_id} does not exist")
    return schedule


# --- workflows -------------------------------------------------------------------------------------

@console.route("/workflows", methods=["GET", "POST"])
@session.signed_in
def workflow_list() -> Page:
    errors: dict[str, list[str]] = {}
    if request.method == "POST":
        data, errors = forms.loaded(WorkflowIn(), {k: (request.form.get(k) or "").strip() for k in ("name", "task")})
        if not errors:
            workflows.create(caller().id, data, clock.utcnow())
            flash(f"Created workflow {data['name']}.")
            return redirect(url_for("console.workflow_list"))
    page = render_template("workflows.html", workflows=queries.workflows(), counts=queries.schedules_per_workflow(),
                           tasks=task_names(), errors=errors, form=request.form)
    return (page, 422) if errors else page

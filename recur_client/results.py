"""What the API answers, as typed dicts: each is the JSON the API sent, key for key (tests/test_recur_client.py
checks every one against the OpenAPI document), so `print(json.dumps(result))` shows exactly the answer and a
field the server adds later passes through. Instants are ISO 8601 strings in UTC, as the API writes them."""

from __future__ import annotations

from typing import Any, Generic, NotRequired, TypedDict, TypeVar

T = TypeVar("T")


class Page(TypedDict, Generic[T]):
    """One page of a list. `next` is the cursor of the page after it (None on the last page); `total` is the
    count of the whole list, capped at 10,000 rows (then `total_capped` is true)."""

    items: list[T]
    total: int
    total_capped: bool
    next: str | None


# --- owners, tokens, the audit trail ------------------------------------------------------------

class Quota(TypedDict):
    limit: int
    override: int | None


class Quotas(TypedDict):
    schedules: Quota
    webhooks: Quota
    tokens: Quota


class Owner(TypedDict):
    id: int
    name: str
    is_admin: bool
    created_at: str
    quotas: Quotas


class Token(TypedDict):
    id: int
    name: str
    prefix: str
    owner_id: int
    created_at: str
    last_used_at: str | None
    expires_at: str | None
    revoked_at: str | None


class CreatedToken(Token):
    """A new token with its secret, `token`: the only answer that ever shows it."""

    token: str


class CreatedOwner(Owner):
    """A new owner with its first token (secret included, shown once)."""

    token: CreatedToken


class OwnerEvent(TypedDict):
    """An entry of the owners' audit trail (admin)."""

    id: int
    owner_id: int
    owner_name: str
    actor_id: int | None
    actor: str
    action: str
    at: str
    changes: Any | None


class ScheduleEvent(TypedDict):
    """An entry of a schedule's audit trail: who created, changed, paused, ... it, and what changed."""

    id: int
    schedule_id: str
    actor_id: int | None
    actor: str | None
    action: str
    at: str
    changes: Any | None


class Health(TypedDict):
    """`database` and `redis` are "ok" or what is wrong; an admin also sees counts."""

    database: str
    redis: str
    schedules: NotRequired[dict[str, Any]]
    reconciler: NotRequired[dict[str, Any]]


class Task(TypedDict):
    name: str
    path: str


# --- workflows and breakers -----------------------------------------------------------------

class Workflow(TypedDict):
    id: int
    name: str
    task: str
    owner_id: int
    max_concurrent_runs: int | None
    concurrency_policy: str
    breaker_threshold: int | None
    breaker_reset_seconds: int
    breaker_state: str
    queue: str | None
    created_at: str


# "from" is a Python keyword: the functional form
BreakerTransition = TypedDict("BreakerTransition", {"from": str, "to": str, "at": str, "reason": str, "by": str})


class Breaker(TypedDict):
    """A workflow's circuit breaker; `history` holds its newest 100 transitions, oldest first."""

    workflow_id: int
    enabled: bool
    threshold: int | None
    reset_seconds: int
    state: str
    consecutive_failures: int
    opened_at: str | None
    probe_run_id: str | None
    history: list[BreakerTransition]


# --- schedules and their runs ---------------------------------------------------------------

class After(TypedDict):
    """The schedule whose runs' ends trigger this one (docs/follows.md)."""

    schedule_id: str
    on: str
    delay_seconds: int
    within: str | None


class Schedule(TypedDict):
    """A schedule as lists show it."""

    id: str
    name: str
    key: str | None
    description: str | None
    workflow_id: int
    owner_id: int
    trigger_node_id: str | None
    interval_seconds: int | None
    cron: str | None
    day_or: bool | None
    rrule: str | None
    at: str | None
    anchor_date: str | None
    timezone: str | None
    start_at: str | None
    end_at: str | None
    only_between: str | None
    not_on: list[Any] | None
    jitter_seconds: int | None
    calendar_id: int | None
    on_calendar: str | None
    total_repeats: int
    max_retries: int
    timeout_seconds: int | None
    trigger_payload: Any | None
    on_exhausted: str
    catch_up: str
    catch_up_window_seconds: int | None
    catch_up_limit: int
    overlap: str
    alert_after_seconds: int | None
    keep_runs_days: int | None
    after: After | None
    health: str
    late_since: str | None
    long_after_seconds: int | None
    late_after_seconds: int | None
    failing_after: int | None
    failing_streak: int
    failing_since: str | None
    status: str
    pause_note: str | None
    paused_at: str | None
    current_repeat: int
    current_retry: int
    last_run_at: str | None
    next_run_at: str | None
    run_count: int
    error_count: int
    last_error: str | None
    revision: int
    created_at: str
    updated_at: str | None


class ScheduleDetail(Schedule):
    """A schedule as create, edit, pause and resume answer: with its timing in words and its next runs."""

    timing_description: str
    next_runs: list[str]


class RunBrief(TypedDict):
    id: str
    scheduled_for: str
    started_at: str
    status: str
    trigger: str


class ScheduleStats(TypedDict):
    runs: int
    runs_by_trigger: dict[str, int]
    runs_by_status: dict[str, int]
    ticks_missed: dict[str, Any]
    ticks_skipped: dict[str, Any]
    running: int
    buffered: int
    window: int
    window_full: bool


class ScheduleDescription(ScheduleDetail):
    """One schedule as GET answers it: its detail with its recent runs and their counts."""

    stats: ScheduleStats
    recent_runs: list[RunBrief]


class PreviewTime(TypedDict):
    utc: str
    local: str


class Preview(TypedDict):
    description: str
    timezone: str
    next_runs: list[PreviewTime]


class ExplainRun(TypedDict):
    """A run or gap row as an explanation names it (the run's own GET has the rest)."""

    id: str
    status: str
    trigger: str
    scheduled_for: str
    started_at: str
    finished_at: str | None
    reason: str | None
    ticks: int | None
    error: str | None


class Explanation(TypedDict):
    """Why a schedule did or didn't run at a time (docs/explain.md): `kind` and a one-line `summary`, the tick
    explained (`nominal`), and the facts that answer it."""

    kind: str
    summary: str
    asked: str
    nominal: str | None
    run: ExplainRun | None
    attempts: int
    late_seconds: float | None
    reason: str | None
    held_by: ExplainRun | None
    paused_by: str | None
    paused_at: str | None
    pause_note: str | None
    breaker_since: str | None
    moved_to: str | None
    next_tick: str | None
    notes: list[str]


class BatchDeleted(TypedDict):
    deleted: list[str]
    not_found: list[str]


class Run(TypedDict):
    id: str
    schedule_id: str
    repeat_number: int | None
    retry_number: int
    scheduled_for: str | None
    started_at: str | None
    finished_at: str | None
    status: str
    error: str | None
    worker: str | None
    trigger: str
    reason: str | None
    ticks: int | None
    backfill_id: str | None
    triggered_by_run_id: str | None


class RunDetail(Run):
    """One run as its own GET answers it: with what its task left behind, each bounded (null: nothing)."""

    traceback: str | None
    output: str | None
    logs: str | None
    result: str | None


class Triggered(TypedDict):
    run_id: str
    schedule_id: str
    scheduled_for: str
    trigger: str


class BackfillPlan(TypedDict):
    """A backfill's dry run: the nominal times it would run."""

    dry_run: bool
    total: int
    times: list[str]


class Backfill(TypedDict):
    id: str
    schedule_id: str
    start: str
    end: str
    overlap: str | None
    status: str
    total: int
    done: int
    times: list[str]
    created_at: str
    finished_at: str | None


# --- webhooks -------------------------------------------------------------------------------

class Webhook(TypedDict):
    id: int
    owner_id: int
    url: str
    event_types: list[str]
    created_at: str


class CreatedWebhook(Webhook):
    """A new webhook with its signing secret, `secret`: the only answer that ever shows it."""

    secret: str


class DeliveryAttempt(TypedDict):
    """One attempt to send an event to a webhook (the delivery log); `requested_by` names who asked for a
    redelivery."""

    delivery_id: int
    event_id: str
    event_type: str
    attempt: int
    at: str
    status_code: int | None
    duration_ms: int
    error: str | None
    requested_by: str | None


class DeliveryAttemptPage(Page[DeliveryAttempt]):
    """A page of the delivery log; `pending` counts the deliveries not yet sent."""

    pending: int


class Delivery(TypedDict):
    id: int
    webhook_id: int
    event_id: str
    status: str
    attempts: int
    next_attempt_at: str
    redelivered_at: str | None


# --- calendars ------------------------------------------------------------------------------

class Calendar(TypedDict):
    """A named calendar; `day_count` is how many days it holds (list them with calendars.days)."""

    id: int
    owner_id: int
    name: str
    country: str | None
    subdivision: str | None
    first_year: int
    last_year: int
    dates: list[str]
    removed: list[str]
    day_count: int
    created_at: str
    updated_at: str


class CalendarDay(TypedDict):
    date: str
    name: str


CalendarDays = TypedDict("CalendarDays", {"calendar_id": int, "from": str, "to": str, "days": list[CalendarDay]})

"""The console in a real browser (headless Chromium from Debian's package, driven by Playwright) against
gunicorn and a worker: sign in, make a workflow, create a cron schedule with the live preview showing,
watch it run, pause it with a note, resume it, read its history and chart. Screenshots of each page go to
docs/screenshots/ for review (from the SQLite pass; the PostgreSQL pass, which runs at the same time, keeps
its own in a temporary directory)."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest

from harness.screenshots import save_screenshot
from harness.servers import wait_for
from recur_server.workers.slots import default_concurrency

pytestmark = pytest.mark.integration

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture
def page() -> Iterator[object]:
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (scripts/bootstrap installs Debian's chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        context = browser.new_context(viewport={"width": 1280, "height": 900}, timezone_id="America/New_York")
        try:
            yield context.new_page()
        finally:
            context.close()
            browser.close()


def _history_shows(page, wanted: Callable[[str], bool]) -> bool:  # type: ignore[no-untyped-def]
    """Whether the schedule's page shows `wanted` in its history; reloads it when not, for the next look."""
    if wanted(page.locator("#history").inner_text()):
        return True
    page.reload()
    return False


def test_sign_in_create_watch_pause_resume_and_read_the_history(stack, page):
    from playwright.sync_api import expect

    stack.start_worker(slots=None)  # as the Procfile starts it: the health page's screenshot shows its slots
    base = stack.api.base
    page.goto(base + "/")
    expect(page).to_have_url(base + "/signin?next=/schedules?")
    save_screenshot(page, "1-signin")
    page.fill("#token", stack.api.token)
    page.click("button[type=submit]")
    expect(page).to_have_url(base + "/schedules")
    cookie = next(c for c in page.context.cookies() if c["name"] == "recur_console")
    assert cookie["httpOnly"] and cookie["secure"] and cookie["sameSite"] == "Lax"

    page.goto(base + "/workflows")
    page.fill("#w-name", "reports")
    page.select_option("#w-task", "builtin.noop")
    page.click("#create-workflow")
    expect(page.locator("table.list")).to_contain_text("builtin.noop")
    save_screenshot(page, "2-workflows")

    page.goto(base + "/schedules/new")
    page.fill("#f-name", "every minute")
    page.select_option("#f-workflow_id", label="reports (builtin.noop)")
    page.fill("#f-cron", "61 * * * *")
    expect(page.locator("#preview")).to_contain_text("cron")  # the API's refusal, shown as it is typed
    page.fill("#f-cron", "* * * * *")
    page.fill("#f-timezone", "Europe/Berlin")
    expect(page.locator("#preview")).to_contain_text("Every minute")
    expect(page.locator("#preview li")).to_have_count(5)
    save_screenshot(page, "3-new-schedule-with-preview")
    page.click("#save")
    expect(page.locator("#status")).to_have_text("active")
    schedule_url = page.url

    # a cron runs on the minute: the first run is at most a minute away
    wait_for(lambda: _history_shows(page, lambda history: "succeeded" in history), 90, interval=2,
             what="the schedule's first run in its history")
    expect(page.locator("svg.chart rect")).not_to_have_count(0)
    save_screenshot(page, "4-schedule-after-its-first-run")

    page.fill("#pause-note", "maintenance window")
    page.click("#pause")
    expect(page.locator("#status")).to_have_text("paused")
    expect(page.locator("#pause-note-shown")).to_contain_text("maintenance window")
    save_screenshot(page, "5-paused-with-a-note")
    page.click("#resume")
    expect(page.locator("#status")).to_have_text("active")
    expect(page.locator(".flash")).to_contain_text("Resumed.")
    history = page.locator("#history tbody tr")
    expect(history.first).to_contain_text("succeeded")
    expect(history.first).to_contain_text("schedule")

    page.click("#trigger")  # a manual run, now
    expect(page.locator(".flash")).to_contain_text("Triggered")
    wait_for(lambda: _history_shows(page, lambda history: "manual" in history), 30, interval=1,
             what="the manual run in the history")

    page.click("#backfill")  # three past minutes: the list first, then the runs
    start = (datetime.now(UTC) - timedelta(minutes=10)).replace(second=0, microsecond=0)
    page.fill("#backfill-start", start.isoformat())
    page.fill("#backfill-end", (start + timedelta(minutes=3)).isoformat())
    page.click("#backfill-preview")
    expect(page.locator("#backfill-times li")).to_have_count(3)
    save_screenshot(page, "10-backfill-dry-run")
    page.click("#backfill-confirm")
    expect(page.locator(".flash")).to_contain_text("Backfill of 3 runs started")
    wait_for(lambda: _history_shows(page, lambda history: history.count("backfill") >= 3), 30, interval=1,
             what="the backfill's runs in the history")
    save_screenshot(page, "11-after-trigger-and-backfill")

    page.goto(base + "/schedules")
    expect(page.locator("table.list")).to_contain_text("every minute")
    expect(page.locator(".strip .cell.succeeded")).not_to_have_count(0)
    save_screenshot(page, "6-schedules")
    page.goto(base + "/health")
    expect(page.locator("#redis-state")).to_have_text("ok")
    expect(page.locator("#workers tbody tr")).to_have_count(default_concurrency(0))  # one worker.py, its slots
    save_screenshot(page, "7-health")

    page.set_viewport_size({"width": 390, "height": 844})  # a phone
    for path, name in (("/schedules", "8-phone-schedules"), (schedule_url.removeprefix(base), "9-phone-schedule")):
        page.goto(base + path)
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), path
        # every badge shown shows whole, without scrolling (a schedule's status, each run's in the history)
        cut = page.evaluate("""() => [...document.querySelectorAll('.badge')].filter(b => {
            const box = b.getBoundingClientRect(); return box.width > 0 && box.right > window.innerWidth;
        }).map(b => b.textContent)""")
        assert cut == [], (path, cut)
        save_screenshot(page, name)
    hidden = page.evaluate("""() => [...document.querySelectorAll('#history tbody .badge')]
        .filter(b => b.getBoundingClientRect().width === 0).map(b => b.textContent)""")
    assert hidden == [] and page.locator("#history tbody .badge").count() > 0, hidden  # each run's status


def test_the_form_puts_a_schedule_on_a_calendar_and_the_preview_moves_its_ticks_off_it(stack, page):
    """The calendar menu lists the owner's calendars; choosing one (shift_next) changes the live preview as
    it is chosen: no tick falls on the calendar's three days, and the ticks of those days run on the next."""
    from playwright.sync_api import expect

    today = datetime.now(UTC).date()
    days = [(today + timedelta(days=n)).isoformat() for n in (1, 2, 3)]
    stack.api.ok("POST", "/api/v1/calendars/", {"name": "office", "dates": days})
    stack.api.ok("POST", "/api/v1/workflows/", {"name": "reports", "task": "builtin.noop"})
    base = stack.api.base
    page.goto(base + "/")
    page.fill("#token", stack.api.token)
    page.click("button[type=submit]")
    page.goto(base + "/schedules/new")
    page.fill("#f-name", "daily")
    page.select_option("#f-workflow_id", label="reports (builtin.noop)")
    page.fill("#f-cron", "0 12 * * *")
    expect(page.locator("#preview li")).to_have_count(5)
    page.click("#more-options summary")
    page.select_option("#f-calendar_id", label="office")
    page.select_option("#f-on_calendar", "shift_next")
    expect(page.locator("#preview")).to_contain_text("moved to the next day off the calendar (3 dates)")
    shown = page.locator("#preview li").all_inner_texts()
    assert shown and not [t for t in shown if any(t.startswith(day) for day in days)], shown
    page.click("#save")
    expect(page.locator("#status")).to_have_text("active")
    expect(page.locator("#schedule-calendar")).to_contain_text("office")

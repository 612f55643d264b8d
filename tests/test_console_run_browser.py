"""A run's page in a real browser (Debian's Chromium through Playwright, as tests/test_console_browser.py
drives it) against gunicorn and a worker: the schedules list and the schedule's page bring a run's end in by
themselves, and the run's page shows the traceback, output and log lines of a task that printed, logged and
raised; at 390 px wide, and with JavaScript off. Screenshots of the run's page go to docs/screenshots/."""

from __future__ import annotations

from typing import Any

import pytest

from harness.screenshots import save_screenshot
from harness.stack import Stack

pytestmark = pytest.mark.integration


@pytest.fixture
def stack_env() -> dict[str, str]:
    return {"RECUR_TASK_MODULES": "harness.jobs"}  # the web and the worker know tests.noisy


def _fits(page: Any, width: int) -> bool:
    return bool(page.evaluate(f"document.documentElement.scrollWidth <= {width}"))


def test_a_failed_runs_page_shows_its_traceback_output_and_logs_and_the_lists_refresh_themselves(
        stack: Stack, browser: Any) -> None:
    from playwright.sync_api import expect

    stack.start_worker()
    stack.wait_workers_ready()
    base = stack.api.base
    workflow = stack.api.ok("POST", "/api/v1/workflows/", {"name": "noisy", "task": "tests.noisy"})
    schedule = stack.api.ok("POST", "/api/v1/schedules/", {
        "name": "noisy report", "workflow_id": workflow["id"], "interval_seconds": 8, "total_repeats": 1,
        "max_retries": 0, "timezone": "Europe/Berlin"})
    page = stack.console_page(browser, viewport={"width": 1280, "height": 900})
    listed = page.locator("#schedules-wrap tbody tr").first
    expect(listed).to_contain_text("noisy report")
    expect(listed).not_to_contain_text("failed")
    expect(listed).to_contain_text("failed", timeout=40_000)  # no reload: the list refreshed itself

    page.click("text=noisy report")
    expect(page.locator(".zone")).to_contain_text("Times in Europe/Berlin")
    nominal = page.locator("#history tbody tr").first.locator("td").first
    expect(nominal).to_contain_text("CET")
    assert (nominal.locator("time").get_attribute("title") or "").endswith(" UTC")
    expect(page.locator("svg.chart text.tick")).not_to_have_count(0)  # the chart's time axis
    nominal.locator("a").click()

    expect(page.locator("#run-status")).to_have_text("failed")
    expect(page.locator("#run-traceback")).to_contain_text("Traceback (most recent call last):")
    expect(page.locator("#run-traceback")).to_contain_text("ValueError: noisy task fails on purpose")
    expect(page.locator("#run-output")).to_have_text("printed to stdout\nprinted to stderr\n")
    expect(page.locator("#run-logs")).to_contain_text("WARNING tests.noisy: logged a warning")
    save_screenshot(page, "12-run-page")
    run_url = page.url

    phone = stack.console_page(browser, viewport={"width": 390, "height": 844}, is_mobile=True)
    for url in (run_url, base + f"/schedules/{schedule['id']}", base + "/schedules"):
        phone.goto(url)
        assert _fits(phone, 390), url
    phone.goto(run_url)
    expect(phone.locator("#run-traceback")).to_be_visible()
    save_screenshot(phone, "13-run-page-phone")

    no_js = stack.console_page(browser, viewport={"width": 1280, "height": 900}, java_script_enabled=False)
    no_js.goto(run_url)
    expect(no_js.locator("#run-traceback")).to_contain_text("ValueError: noisy task fails on purpose")
    expect(no_js.locator("#run-output")).to_contain_text("printed to stderr")
    expect(no_js.locator("#run-logs")).to_contain_text("logged a warning")
    no_js.goto(base + f"/schedules/{schedule['id']}?tz=UTC")
    expect(no_js.locator("#history tbody tr").first.locator("td").first).to_contain_text("UTC")

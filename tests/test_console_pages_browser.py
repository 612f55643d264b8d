"""The console's pages beyond a schedule's basics in a real browser (Debian's Chromium through Playwright, as
tests/test_console_browser.py drives it) against gunicorn, a worker and a real webhook receiver: a webhook made
with its secret shown once, three schedules paused in bulk and the webhook's delivery log showing each delivery
and its attempts, a delivery sent again; a schedule's overlap and catch-up edited in the form's More options;
a workflow's breaker set in its edit form, opened by real failures and reset; a schedule's audit trail; a
token made, signed in with and revoked, which signs the session out; the owners' page. The pages are checked at
390 px wide, and the token and owner pages with JavaScript off. Screenshots go to docs/screenshots/ (20-29)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.receiver import Receiver
from harness.screenshots import save_screenshot
from harness.servers import wait_for
from harness.stack import QUICK_WEBHOOKS, Stack

pytestmark = pytest.mark.integration


@pytest.fixture
def stack_env() -> dict[str, str]:
    return QUICK_WEBHOOKS  # webhooks to a loopback receiver, retried quickly


def _fits(page: Any, width: int) -> bool:
    return bool(page.evaluate(f"document.documentElement.scrollWidth <= {width}"))


def _shows(page: Any, selector: str, wanted: str) -> bool:
    """Whether `selector` on the page shows `wanted`; reloads it when not, for the next look."""
    if wanted in page.locator(selector).inner_text():
        return True
    page.reload()
    return False


def _answered(page: Any, count: int) -> bool:
    """Whether the delivery log shows `count` attempts answered 204; reloads it when not, for the next look."""
    if page.locator("#deliveries .badge", has_text="204").count() == count:
        return True
    page.reload()
    return False


def test_webhook_bulk_pause_delivery_log_schedule_policies_breaker_reset_and_audit_trail(
        stack: Stack, receiver: Receiver, browser: Any) -> None:
    from playwright.sync_api import expect

    stack.start_worker()
    stack.wait_workers_ready()
    base, api = stack.api.base, stack.api
    page = stack.console_page(browser, viewport={"width": 1280, "height": 900})

    page.click("text=Webhooks")
    page.fill("#f-url", receiver.url)
    page.check("#event-schedule-paused")
    page.check("#event-schedule-dead")
    page.click("#create-webhook")
    expect(page.locator("#webhook-secret")).to_contain_text("whsec_")
    secret = page.locator("#webhook-secret").inner_text()
    save_screenshot(page, "20-webhook-created")
    page.click("text=Its delivery log")
    webhook_url = page.url
    assert secret not in page.content()  # shown once

    workflow = api.ok("POST", "/api/v1/workflows/", {"name": "reports", "task": "builtin.noop"})
    made = {name: api.ok("POST", "/api/v1/schedules/", {"name": name, "workflow_id": workflow["id"],
                                                        "cron": "0 3 * * *"})["id"]
            for name in ("nightly-a", "nightly-b", "nightly-c", "nightly-d")}
    page.goto(base + "/schedules")
    for name in ("nightly-a", "nightly-b", "nightly-c"):
        page.check(f'input[aria-label="tick {name}"]')
    page.fill("#bulk-note", "database migration")
    save_screenshot(page, "21-bulk-pause")
    page.click("#bulk-pause")
    expect(page.locator(".flash")).to_contain_text("Paused 3 schedules.")
    statuses = {name: api.ok("GET", f"/api/v1/schedules/{sid}/")["status"] for name, sid in made.items()}
    assert statuses == {"nightly-a": "paused", "nightly-b": "paused", "nightly-c": "paused", "nightly-d": "active"}

    page.goto(webhook_url)  # one schedule.paused delivery per schedule, each with its attempt
    wait_for(lambda: _answered(page, 3), 30, interval=1, what="three deliveries answered 204 in the log")
    expect(page.locator("#deliveries")).to_contain_text("schedule.paused")
    assert len(receiver.events()) == 3
    save_screenshot(page, "22-webhook-delivery-log")
    page.locator("#deliveries button:has-text('Send again')").first.click()
    expect(page.locator(".flash")).to_contain_text("will be sent again now")
    expect(page.locator("#deliveries")).to_contain_text("asked by")
    wait_for(lambda: len(receiver.events()) == 4, 30, what="the redelivery at the receiver")

    page.goto(base + f"/schedules/{made['nightly-d']}/edit")
    expect(page.locator("#f-overlap")).to_be_hidden()  # the common case stays short
    page.click("#more-options summary")
    page.select_option("#f-overlap", "buffer_one")
    page.select_option("#f-catch_up", "all")
    page.fill("#f-catch_up_limit", "5")
    page.fill("#f-catch_up_window_seconds", "3600")
    save_screenshot(page, "23-schedule-more-options")
    page.click("#save")
    expect(page.locator(".flash")).to_contain_text("catch_up, catch_up_limit, catch_up_window_seconds, overlap")
    expect(page.locator("body")).to_contain_text("all (at most 5), window 3600 s")
    edited = api.ok("GET", f"/api/v1/schedules/{made['nightly-d']}/")
    assert (edited["overlap"], edited["catch_up"], edited["catch_up_limit"], edited["catch_up_window_seconds"]) == (
        "buffer_one", "all", 5, 3600)

    page.goto(base + "/workflows")
    page.fill("#w-name", "upstream")
    page.select_option("#w-task", "builtin.fail")
    page.click("#create-workflow")
    upstream = next(w for w in api.ok("GET", "/api/v1/workflows/")["items"] if w["name"] == "upstream")
    page.click(f"#edit-workflow-{upstream['id']}")
    page.fill("#f-breaker_threshold", "1")
    page.fill("#f-breaker_reset_seconds", "3600")
    page.click("#save-workflow")
    expect(page.locator(".flash")).to_contain_text("breaker_reset_seconds, breaker_threshold")
    failing = api.ok("POST", "/api/v1/schedules/", {"name": "calls upstream", "workflow_id": upstream["id"],
                                                    "interval_seconds": 2, "max_retries": 0,
                                                    "on_exhausted": "continue"})
    page.click(f"#breaker-page-{upstream['id']}")
    wait_for(lambda: _shows(page, "#breaker-state", "open"), 40, interval=1, what="the breaker opened by failures")
    expect(page.locator("#breaker-history tbody tr").first).to_contain_text("closed → open")
    api.ok("POST", f"/api/v1/schedules/{failing['id']}/pause/")  # else its next failure opens it again
    page.click("#breaker-reset")
    expect(page.locator("#breaker-state")).to_have_text("closed")
    expect(page.locator("#breaker-history tbody tr").first).to_contain_text("reset by hand")
    expect(page.locator("#breaker-history tbody tr").first).to_contain_text("(token")
    save_screenshot(page, "24-breaker-reset")
    assert api.ok("GET", f"/api/v1/workflows/{upstream['id']}/breaker/")["history"][-1]["reason"] == "reset by hand"

    page.goto(base + f"/schedules/{made['nightly-a']}")
    page.click("#audit-trail")
    expect(page.locator("#events tbody tr").first).to_contain_text("pause")
    expect(page.locator("#events tbody tr").first).to_contain_text("database migration")
    expect(page.locator("#events tbody tr").last).to_contain_text("create")
    save_screenshot(page, "25-audit-trail")
    audit_url = page.url

    page.set_viewport_size({"width": 390, "height": 844})  # a phone
    for url in (base + "/webhooks", webhook_url, base + "/schedules", base + f"/schedules/{made['nightly-d']}/edit",
                base + f"/workflows/{upstream['id']}/edit", base + f"/workflows/{upstream['id']}/breaker", audit_url):
        page.goto(url)
        assert _fits(page, 390), url
    page.goto(webhook_url)
    save_screenshot(page, "26-phone-delivery-log")


def test_a_token_made_signed_in_with_and_revoked_signs_out_and_the_owners_page_without_javascript(
        stack: Stack, browser: Any) -> None:
    from playwright.sync_api import expect

    base = stack.api.base
    page = stack.console_page(browser, viewport={"width": 1280, "height": 900}, java_script_enabled=False)
    page.goto(base + "/tokens")
    page.fill("#f-name", "browser")
    page.fill("#f-expires_at", "2099-01-01T00:00:00Z")
    page.click("#create-token")
    expect(page.locator("#token-secret")).to_contain_text("recur_")
    secret = page.locator("#token-secret").inner_text()
    save_screenshot(page, "27-token-created")
    page.click("text=Sign out")

    page.fill("#token", secret)  # signed in with the new token: revoking it ends this session
    page.click("button[type=submit]")
    page.wait_for_url(base + "/schedules")
    page.goto(base + "/tokens")
    row = page.locator("#tokens tr", has_text="this session")
    expect(row).to_contain_text("browser")
    expect(row).to_contain_text("2099-01-01")
    row.locator("button:has-text('Revoke')").click()
    page.wait_for_url(base + "/signin")
    expect(page.locator(".flash")).to_contain_text("Revoked token browser, which this session was signed in with")
    page.goto(base + "/tokens")
    assert page.url.startswith(base + "/signin")  # signed out for good
    assert stack.api.call("GET", "/api/v1/me/", headers={"Authorization": f"Bearer {secret}"})[0] == 401

    page.fill("#token", stack.api.token)
    page.click("button[type=submit]")
    page.goto(base + "/owners")
    page.fill("#f-name", "team-b")
    page.click("#create-owner")
    expect(page.locator("#owner-token")).to_contain_text("recur_")
    team_b = page.locator("#owner-token").inner_text()
    save_screenshot(page, "28-owners")
    assert stack.api.call("GET", "/api/v1/me/", headers={"Authorization": f"Bearer {team_b}"})[1]["name"] == "team-b"
    page.locator("#owners tr", has_text="team-b").locator("text=Delete").click()
    page.click("#confirm")
    expect(page.locator(".flash")).to_contain_text("Deleted owner team-b")
    expect(page.locator("#owners")).not_to_contain_text("team-b")

    page.set_viewport_size({"width": 390, "height": 844})
    for path in ("/tokens", "/owners", "/webhooks"):
        page.goto(base + path)
        assert _fits(page, 390), path
    page.goto(base + "/tokens")
    save_screenshot(page, "29-phone-tokens")

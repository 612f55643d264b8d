"""The monitoring kit in docs/monitoring/: the alerting rules and the scrape configuration pass promtool,
and every metric the rules, the Grafana dashboard and the metrics table of docs/operations.md name is one
Recur serves (read from a real /metrics answer)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

from harness.servers import ROOT

KIT = ROOT / "docs" / "monitoring"
_NAME = re.compile(r"\brecur_[a-z_]+[a-z]")
_SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum"), "gauge": ("",)}


def _served(client) -> set[str]:  # type: ignore[no-untyped-def]
    """Every sample name /metrics can answer: each family's TYPE line, with its kind's suffixes."""
    text = client.get("/metrics").get_data(as_text=True)
    names = set()
    for family, kind in re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M):
        base = family.removesuffix("_total") if kind == "counter" else family
        names |= {base + suffix for suffix in _SUFFIXES.get(kind, ("",))}
    return names


def _promtool(*args: str) -> str:
    promtool = shutil.which("promtool")
    assert promtool, "promtool is missing: scripts/bootstrap installs it (Debian's prometheus package)"
    done = subprocess.run([promtool, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_alerting_rules_and_the_scrape_configuration_pass_promtool() -> None:
    assert "SUCCESS: 10 rules found" in _promtool("check", "rules", str(KIT / "recur-alerts.yml"))
    _promtool("check", "config", str(KIT / "prometheus.yml"))


def test_the_rules_fire_on_the_series_they_are_written_for() -> None:
    """promtool's unit tests (tests/monitoring/recur-alerts-test.yml): series as two webs and a worker serve
    them, and when each rule fires, with its labels and text."""
    assert "SUCCESS" in _promtool("test", "rules", str(ROOT / "tests" / "monitoring" / "recur-alerts-test.yml"))


def test_every_metric_the_rules_the_dashboard_and_the_docs_name_is_served(app, client) -> None:
    served = _served(client)
    dashboard = json.loads((KIT / "grafana-dashboard.json").read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    assert len(exprs) >= 13
    named = {
        "dashboard": {n for expr in exprs for n in _NAME.findall(expr)},
        "rules": set(_NAME.findall((KIT / "recur-alerts.yml").read_text())),
        "docs": {n for line in (ROOT / "docs" / "operations.md").read_text().splitlines()
                 if line.startswith("| `recur_") for n in _NAME.findall(line)},
    }
    for where, names in named.items():
        unknown = {n for n in names if n not in served and n + "_bucket" not in served}
        assert not unknown, f"{where} names metrics Recur does not serve: {sorted(unknown)}"
    # And the dashboard shows every family Recur serves.
    families = {n.removesuffix("_total").removesuffix("_bucket").removesuffix("_count").removesuffix("_sum")
                for n in served if n.startswith("recur_") and not n.endswith("_created")}
    shown = {n.removesuffix("_total").removesuffix("_bucket") for n in named["dashboard"]}
    assert families <= shown, sorted(families - shown)


def test_the_kit_is_where_the_docs_say() -> None:
    page = (ROOT / "docs" / "monitoring.md").read_text()
    for name in ("prometheus.yml", "recur-alerts.yml", "grafana-dashboard.json"):
        assert (KIT / name).exists() and f"monitoring/{name}" in page


def test_deliveries_in_trouble_are_counted_by_state(app, client) -> None:
    from datetime import UTC, datetime, timedelta

    from recur_server.infra.extensions import db
    from recur_server.notify.models import Delivery, Event

    now = datetime.now(UTC)
    db.session.add(Event(id="evt_" + "a" * 32, owner_id=1, type="run.failed", occurred_at=now, data={}))
    db.session.flush()  # the event before its deliveries (their foreign key)
    rows = [("pending", 0, now), ("pending", 2, now), ("pending", 3, now), ("failed", 9, now - timedelta(hours=2)),
            ("failed", 9, now - timedelta(days=2)), ("delivered", 1, now)]
    for webhook_id, (status, attempts, at) in enumerate(rows, start=1):
        db.session.add(Delivery(webhook_id=webhook_id, owner_id=1, event_id="evt_" + "a" * 32, status=status,
                                attempts=attempts, next_attempt_at=at, created_at=at))
    db.session.commit()
    text = client.get("/metrics").get_data(as_text=True)
    assert 'recur_webhook_deliveries{state="retrying"} 2.0' in text  # pending after a failed attempt
    assert 'recur_webhook_deliveries{state="given_up_24h"} 1.0' in text  # not the one given up two days ago

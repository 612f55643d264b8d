"""Settings: each declared once (recur_server.infra.config.Settings), read from the environment, exported to the app."""

from __future__ import annotations

from dataclasses import fields

import pytest

from recur_server.infra.config import INSTANCE_DIR, SettingError, Settings, flask_config

# Every environment variable Recur reads, with its default: renaming one, or changing a default, breaks
# deployments that set or rely on it.
DEFAULTS = {
    "REDIS_URL": "redis://localhost:6379/0",
    "DATABASE_URL": f"sqlite:///{INSTANCE_DIR / 'recur.db'}",
    "RECUR_QUEUE": "recur",
    "RECUR_QUEUES": "",
    "RECUR_METRICS_PORT": 0,
    "RECUR_METRICS_ADDRESS": "127.0.0.1",
    "RECUR_WORKER_CONCURRENCY": 0,
    "RECUR_WORKER_MIN_SLOTS": 0,
    "RECUR_WORKER_SLOT_IDLE_SECONDS": 60.0,
    "RECUR_REDIS_TIMEOUT_SECONDS": 2.0,
    "RECUR_TASK_MODULES": [],
    "RECUR_SYNC_ON_START": False,
    "RECUR_SYNC_OWNER": None,
    "RECUR_RECONCILE_SECONDS": 5.0,
    "RECUR_RECONCILE_SWEEP_SECONDS": 3600.0,
    "RECUR_LEASE_SECONDS": 5.0,
    "RECUR_TIMEOUT_GRACE_SECONDS": 5.0,
    "RECUR_MOVER_MAX_SLEEP": 0.2,
    "RECUR_LINK_RESULT_TTL": 60,
    "RECUR_EXECUTION_LOG": None,
    "RECUR_REQUEST_DEADLINE_SECONDS": 30.0,
    "RECUR_MAX_BODY_BYTES": 1024 * 1024,
    "RECUR_MAX_APPLY_BODY_BYTES": 32 * 1024 * 1024,
    "RECUR_APPLY_DEADLINE_SECONDS": 300.0,
    "RECUR_MAX_PAYLOAD_BYTES": 64 * 1024,
    "RECUR_METRICS_TOKEN": None,
    "RECUR_LOG_FORMAT": "text",
    "RECUR_SECRET_KEY": None,
    "RECUR_SECURE_COOKIES": True,
    "RECUR_WEBHOOK_ALLOW_HOSTS": "",
    "RECUR_WEBHOOK_EGRESS": "",
    "RECUR_WEBHOOK_TIMEOUT_SECONDS": 10.0,
    "RECUR_WEBHOOK_BACKOFF_SECONDS": 5.0,
    "RECUR_WEBHOOK_BACKOFF_MAX_SECONDS": 3600.0,
    "RECUR_WEBHOOK_CONCURRENCY": 8,
    "RECUR_WATCH_SECONDS": 1.0,
    "RECUR_OVERDUE_AFTER_SECONDS": 60.0,
    "RECUR_WORKER_GRACE_SECONDS": 15.0,
    "RECUR_MAX_SCHEDULES_PER_OWNER": 10_000,
    "RECUR_MAX_WEBHOOKS_PER_OWNER": 50,
    "RECUR_MAX_TOKENS_PER_OWNER": 100,
    "RECUR_KEEP_RUNS_DAYS": 30,
    "RECUR_KEEP_RUNS_MIN": 100,
    "RECUR_KEEP_EVENTS_DAYS": 7,
    "RECUR_KEEP_AUDIT_DAYS": 365,
    "RECUR_KEEP_BACKFILLS_DAYS": 30,
    "RECUR_PRUNE_SECONDS": 60.0,
    "RECUR_PRUNE_BATCH": 500,
    "RECUR_PRUNE_MAX_BATCHES": 50,
    "RECUR_RUN_OUTPUT_BYTES": 64 * 1024,
}


def test_every_setting_keeps_its_name_and_default() -> None:
    assert Settings.from_env({}).__dict__ == DEFAULTS
    assert Settings.from_env({name: "" for name in DEFAULTS}).__dict__ == DEFAULTS  # empty is unset


def test_every_setting_says_what_it_means() -> None:
    assert all(each.metadata["meaning"].strip() for each in fields(Settings))


def test_values_are_parsed_by_the_settings_type() -> None:
    settings = Settings.from_env({
        "RECUR_TASK_MODULES": " mytasks, other.tasks ,", "RECUR_LEASE_SECONDS": "3", "RECUR_LINK_RESULT_TTL": "30",
        "RECUR_SECURE_COOKIES": "0", "RECUR_EXECUTION_LOG": "/tmp/runs.log", "REDIS_URL": "redis://cache:6379/1",
    })
    assert settings.RECUR_TASK_MODULES == ["mytasks", "other.tasks"]
    assert settings.RECUR_LEASE_SECONDS == 3.0 and settings.RECUR_LINK_RESULT_TTL == 30
    assert settings.RECUR_SECURE_COOKIES is False
    assert (settings.RECUR_EXECUTION_LOG, settings.REDIS_URL) == ("/tmp/runs.log", "redis://cache:6379/1")
    for word, meant in (("off", False), ("no", False), ("False", False), ("1", True), ("yes", True), ("on", True)):
        assert Settings.from_env({"RECUR_SECURE_COOKIES": word}).RECUR_SECURE_COOKIES is meant, word


def test_counts_below_their_least_value_are_raised_to_it() -> None:
    settings = Settings.from_env({"RECUR_WEBHOOK_CONCURRENCY": "0", "RECUR_KEEP_RUNS_DAYS": "-5",
                                  "RECUR_KEEP_RUNS_MIN": "0", "RECUR_PRUNE_BATCH": "-1"})
    assert (settings.RECUR_WEBHOOK_CONCURRENCY, settings.RECUR_KEEP_RUNS_DAYS, settings.RECUR_KEEP_RUNS_MIN,
            settings.RECUR_PRUNE_BATCH) == (1, 0, 1, 1)


@pytest.mark.parametrize(("name", "value"), [("RECUR_LEASE_SECONDS", "five"), ("RECUR_LINK_RESULT_TTL", "1.5"),
                                             ("RECUR_SECURE_COOKIES", "maybe"), ("RECUR_PRUNE_BATCH", " ")])
def test_a_bad_value_is_an_error_naming_its_variable(name: str, value: str) -> None:
    with pytest.raises(SettingError, match=name):
        Settings.from_env({name: value})


def test_the_app_config_derives_flasks_own_keys_from_the_settings_and_overrides() -> None:
    config = flask_config(Settings.from_env({"RECUR_MAX_BODY_BYTES": "2048"}))
    assert config["MAX_CONTENT_LENGTH"] == 2048
    assert config["SQLALCHEMY_DATABASE_URI"] == DEFAULTS["DATABASE_URL"]
    overridden = flask_config(Settings(), {"DATABASE_URL": "postgres://u@h1:5432,h2:5432/db", "TESTING": True,
                                           "RECUR_MAX_BODY_BYTES": 100})
    assert overridden["SQLALCHEMY_DATABASE_URI"] == "postgresql+psycopg://u@/db?host=h1,h2&port=5432,5432"
    assert (overridden["MAX_CONTENT_LENGTH"], overridden["TESTING"]) == (100, True)
    given = flask_config(Settings(), {"SQLALCHEMY_DATABASE_URI": "sqlite://", "MAX_CONTENT_LENGTH": 7})
    assert (given["SQLALCHEMY_DATABASE_URI"], given["MAX_CONTENT_LENGTH"]) == ("sqlite://", 7)

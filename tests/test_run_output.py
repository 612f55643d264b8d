"""What a run's task leaves behind (recur_server.chain.capture): its output and log lines kept as head and tail within
RECUR_RUN_OUTPUT_BYTES, its traceback and return value; written with the run's outcome, in the same
transaction, and deleted with the run."""

from __future__ import annotations

import logging
import sys
import threading
from datetime import UTC, datetime

from sqlalchemy import select

from harness.chain_driver import make_schedule, runs_of, step
from recur_server.chain.capture import Bounded, Capture, Captured, bounded, result_text
from recur_server.infra.extensions import db
from recur_server.models import Run, RunOutput


def test_a_text_within_its_bound_is_kept_whole():
    kept = Bounded(100)
    kept.write("hello ")
    kept.write("world")
    assert kept.text() == "hello world"
    assert Bounded(100).text() is None


def test_a_text_past_its_bound_keeps_its_head_and_tail_and_says_how_much_was_cut():
    kept = Bounded(100)
    for n in range(1000):
        kept.write(f"{n:04d}\n")  # 5,000 bytes in all
    text = kept.text()
    assert text is not None
    assert text.startswith("0000\n0001\n")
    assert text.endswith("0998\n0999\n")
    assert "[... 4900 bytes cut ...]" in text
    head, tail = text.split("\n[... 4900 bytes cut ...]\n")
    assert len(head.encode()) == 50 and len(tail.encode()) == 50


def test_memory_stays_within_about_twice_the_bound_however_much_is_written():
    kept = Bounded(1000)
    for _ in range(10_000):
        kept.write("y" * 97)
        assert len(kept._head) + len(kept._tail) <= 2 * 1000  # noqa: SLF001 - the bound on memory is the point
    assert len((kept.text() or "").encode()) < 1000 + 40


def test_a_cut_through_a_character_does_not_break_the_text():
    assert bounded("é" * 100, 11) is not None  # two bytes each: the cut falls inside one, replaced


def test_the_result_is_json_when_it_serialises_and_its_repr_otherwise():
    assert result_text(None, 100) is None
    assert result_text({"rows": 3, "name": "ünïcode"}, 100) == '{"rows": 3, "name": "ünïcode"}'
    assert result_text({1, 2}, 100) == "{1, 2}"
    assert result_text(float("nan"), 100) == "nan"
    assert result_text(datetime(2026, 3, 2, tzinfo=UTC), 1000) == (
        "datetime.datetime(2026, 3, 2, 0, 0, tzinfo=datetime.timezone.utc)")
    long = result_text(list(range(10_000)), 64)
    assert long is not None and long.startswith("[0, 1, 2") and long.endswith("9998, 9999]")


def test_a_capture_keeps_its_own_threads_output_and_logs_only_and_passes_everything_on():
    other: list[str] = []

    def elsewhere() -> None:
        print("from another thread")
        logging.getLogger("elsewhere").warning("another thread's log line")
        other.append("ran")

    with Capture(4096) as capture:
        print("to stdout")
        print("to stderr", file=sys.stderr)
        logging.getLogger("tests.capture").warning("a warning with %s", "arguments")
        thread = threading.Thread(target=elsewhere)
        thread.start()
        thread.join()
    print("after the capture")
    logging.getLogger("tests.capture").warning("after the capture")
    assert other == ["ran"]
    captured = capture.captured(ValueError("boom"), None)
    assert captured.output == "to stdout\nto stderr\n"
    assert captured.logs is not None and captured.logs.endswith("WARNING tests.capture: a warning with arguments\n")
    assert "another thread" not in (captured.logs + (captured.output or ""))
    assert captured.traceback is not None and captured.traceback.endswith("ValueError: boom\n")
    assert Captured.of(captured.as_dict()) == captured
    assert Captured().empty() and not Captured(result="0").empty()


def test_a_failed_run_keeps_its_output_logs_and_traceback_with_its_outcome_and_loses_them_with_the_run(
        chain_app, fake_clock):
    schedule = make_schedule(fake_clock.now, task="tests.noisy", interval_seconds=10, max_retries=0,
                             on_exhausted="continue")
    step(chain_app, fake_clock)
    [run] = runs_of(schedule.id)
    assert (run.status, run.error) == ("failed", "ValueError: noisy task fails on purpose")
    left = db.session.get(RunOutput, run.id)
    assert left is not None
    assert left.output == "printed to stdout\nprinted to stderr\n"
    assert left.logs is not None and "WARNING tests.noisy: logged a warning" in left.logs
    assert left.traceback is not None and "in noisy" in left.traceback
    assert left.traceback.endswith("ValueError: noisy task fails on purpose\n")
    assert left.result is None
    db.session.rollback()

    db.session.execute(Run.__table__.delete().where(Run.id == run.id))  # as retention deletes it
    db.session.commit()
    assert db.session.scalars(select(RunOutput)).all() == []


def test_a_run_that_leaves_nothing_writes_no_row_and_a_return_value_is_kept(chain_app, fake_clock):
    quiet = make_schedule(fake_clock.now, task="builtin.noop", interval_seconds=10, total_repeats=1)
    returns = make_schedule(fake_clock.now, task="tests.noisy", interval_seconds=10, total_repeats=1,
                            trigger_payload={"raise": False, "result": {"rows": 3}}, name="returns")
    step(chain_app, fake_clock)
    [ran_quietly] = runs_of(quiet.id)
    [returned] = runs_of(returns.id)
    assert db.session.get(RunOutput, ran_quietly.id) is None
    left = db.session.get(RunOutput, returned.id)
    assert left is not None and left.result == '{"rows": 3}' and left.traceback is None


def test_output_past_the_setting_is_cut_to_its_head_and_tail(chain_app, fake_clock):
    chain_app.config["RECUR_RUN_OUTPUT_BYTES"] = 2048
    schedule = make_schedule(fake_clock.now, task="tests.noisy", interval_seconds=10, total_repeats=1,
                             trigger_payload={"raise": False, "lines": 1000})
    step(chain_app, fake_clock, extra_seconds=0)
    [run] = runs_of(schedule.id)
    left = db.session.get(RunOutput, run.id)
    assert left is not None and left.output is not None
    assert left.output.startswith("line 0 x") and left.output.endswith("printed to stderr\n")
    assert "bytes cut ...]" in left.output and len(left.output.encode()) < 2048 + 40


def test_the_run_page_shows_what_the_task_left_behind_in_the_schedules_zone_with_utc_on_hover(chain_app, fake_clock):
    from harness.console_signin import HTTPS, signed_in_browser
    from harness.tokens import new_owner_token, token_for_app

    schedule = make_schedule(fake_clock.now, task="tests.noisy", interval_seconds=10, max_retries=0,
                             on_exhausted="continue", timezone="Asia/Tokyo")
    step(chain_app, fake_clock)
    [run] = runs_of(schedule.id)
    browser = signed_in_browser(chain_app, token_for_app(chain_app))
    history = browser.get(f"/schedules/{schedule.id}", base_url=HTTPS).get_data(as_text=True)
    assert f'/schedules/{schedule.id}/runs/{run.id}"' in history and "UTC" not in history.split("<tbody>")[1].split(
        "</tbody>")[0].replace('title="', "").split('">')[0]  # the history's first cell: Tokyo, UTC on hover
    page = browser.get(f"/schedules/{schedule.id}/runs/{run.id}", base_url=HTTPS).get_data(as_text=True)
    assert 'id="run-traceback"' in page and "ValueError: noisy task fails on purpose" in page
    assert 'id="run-output">printed to stdout\nprinted to stderr\n</pre>' in page
    assert "WARNING tests.noisy: logged a warning" in page and 'id="run-result"' not in page
    started = run.started_at.astimezone(UTC)
    assert f'title="{started:%Y-%m-%d %H:%M:%S} UTC">' in page and " JST</time>" in page
    in_utc = browser.get(f"/schedules/{schedule.id}/runs/{run.id}?tz=UTC", base_url=HTTPS).get_data(as_text=True)
    assert " JST</time>" not in in_utc and "Times in UTC" in in_utc

    db.session.rollback()  # the run's attributes were read in a transaction of this session
    other = signed_in_browser(chain_app, new_owner_token(chain_app, "someone else"))
    assert other.get(f"/schedules/{schedule.id}/runs/{run.id}", base_url=HTTPS).status_code == 404
    assert browser.get(f"/schedules/{schedule.id}/runs/{schedule.id}", base_url=HTTPS).status_code == 404


def test_the_chart_has_a_time_axis_in_the_pages_zone():
    from recur_server.console.chart import Point, axis_labels, timeline

    nominals = [datetime(2026, 3, 2, 12, minute, tzinfo=UTC) for minute in range(0, 60, 5)]
    assert axis_labels(nominals, "Europe/Berlin") == [(0, "13:00"), (3, "13:15"), (6, "13:30"), (8, "13:40"),
                                                     (11, "13:55")]
    assert axis_labels(nominals[:2], "UTC") == [(0, "12:00:00"), (1, "12:05:00")]
    two_days = [datetime(2026, 3, 2, 23, tzinfo=UTC), datetime(2026, 3, 3, 1, tzinfo=UTC)]
    assert axis_labels(two_days, "UTC") == [(0, "03-02 23:00"), (1, "03-03 01:00")]
    svg = timeline([Point(n, 0.5, 1.0, "succeeded") for n in reversed(nominals)], zone="Europe/Berlin")
    assert ">Europe/Berlin</text>" in svg and svg.index(">13:00</text>") < svg.index(">13:55</text>")  # in order


def test_a_lone_runs_time_sits_under_its_column():
    from recur_server.console.chart import Point, timeline

    svg = timeline([Point(datetime(2026, 3, 2, 12, tzinfo=UTC), 0.1, 0.2, "failed")])
    assert 'text-anchor="middle">12:00:00</text>' in svg


def test_pruning_a_run_past_retention_takes_what_its_task_left_behind_and_keeps_the_newest_runs(app):
    from datetime import timedelta

    from recur_server.models import Schedule, Workflow
    from recur_server.policies.retention import Retention
    from recur_server.services.retention import prune

    now = datetime(2026, 6, 1, 12, tzinfo=UTC)
    workflow = Workflow(name="w", task="noop", owner_id=1, created_at=now - timedelta(days=400))
    db.session.add(workflow)
    db.session.flush()
    db.session.add(Schedule(id="s-kept", name="s", workflow_id=workflow.id, owner_id=1, interval_seconds=60,
                                created_at=now - timedelta(days=400), updated_at=now - timedelta(days=400)))
    db.session.flush()
    for days in (60, 1):
        started = now - timedelta(days=days)
        db.session.add(Run(id=f"r-{days}", schedule_id="s-kept", repeat_number=None, retry_number=0,
                           scheduled_for=started, started_at=started, finished_at=started, status="failed"))
        db.session.flush()
        db.session.add(RunOutput(run_id=f"r-{days}", traceback="Traceback ...", output="printed\n"))
    db.session.commit()

    assert prune(now, Retention(runs_days=30, runs_min=1), batch=500, max_batches=10).rows["runs"] == 1
    assert db.session.scalars(select(RunOutput.run_id)).all() == ["r-1"]
    db.session.rollback()

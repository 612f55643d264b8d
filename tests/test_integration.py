"""End to end with real processes: redis-server, gunicorn serving the API, worker.py running links."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Any

import pytest

from harness.servers import RedisServer, flask_command, wait_for
from harness.stack import Api, Stack, parse_instant, serve_api, three_runs_to_done
from harness.tokens import token_from_cli

pytestmark = pytest.mark.integration


def test_the_first_token_comes_from_the_flask_commands(empty_database_url, redis_server):
    """The README's first steps, as a user runs them: `flask init-db`, then `flask tokens create admin`. The
    token printed opens the API (every other test issues its token in-process: see harness/tokens.py)."""
    from recur_server import create_app

    env = {"DATABASE_URL": empty_database_url, "REDIS_URL": redis_server.url}
    token = token_from_cli(env)
    assert token.startswith("recur_")
    client = create_app(env).test_client()
    assert client.get("/api/v1/workflows/", headers={"Authorization": f"Bearer {token}"}).status_code == 200
    wrong = token[:-1] + ("x" if token[-1] != "x" else "y")
    assert client.get("/api/v1/workflows/", headers={"Authorization": f"Bearer {wrong}"}).status_code == 401


def test_schedule_runs_to_done_through_http(stack):
    runs = three_runs_to_done(stack)
    for run in runs:  # never early
        assert parse_instant(run["started_at"]) >= parse_instant(run["scheduled_for"])


def test_kill_9_worker_then_restart_resumes_every_chain_without_duplicates(stack):
    worker = stack.start_worker()
    workflow = stack.api.ok("POST", "/api/v1/workflows/", {"name": "sleep", "task": "builtin.sleep"})
    ids = [
        stack.api.ok("POST", "/api/v1/schedules/", {
            "name": f"s{i}", "workflow_id": workflow["id"], "interval_seconds": 1,
            "trigger_payload": {"seconds": 0.3}, "timeout_seconds": 5,
        })["id"]
        for i in range(6)
    ]
    wait_for(lambda: all(len(stack.api.runs(i)) >= 2 for i in ids), 30, what="every schedule to run twice")
    worker.kill()
    killed_at = max(parse_instant(r["started_at"]) for i in ids for r in stack.api.runs(i))
    stack.start_worker()

    def all_ran_again() -> bool:
        return all(any(parse_instant(r["started_at"]) > killed_at and r["status"] == "succeeded"
                       for r in stack.api.runs(i)) for i in ids)

    wait_for(all_ran_again, 20, interval=0.2, what="every schedule to run again after the restart")
    for schedule_id in ids:
        runs = stack.api.runs(schedule_id)
        finished = Counter((r["repeat_number"], r["retry_number"]) for r in runs if r["reason"] is None)
        assert max(finished.values()) == 1, (schedule_id, finished)
        assert stack.api.ok("GET", f"/api/v1/schedules/{schedule_id}/")["status"] == "active"


def _pending_links(redis_url: str) -> list[str]:
    """Links scheduled in RQ's registry or already moved onto the queue."""
    from redis import Redis

    redis = Redis.from_url(redis_url)
    members = redis.zrange("rq:scheduled:recur", 0, -1) + redis.lrange("rq:queue:recur", 0, -1)
    return [m.decode() for m in members]


def _sleeping_schedule_running(stack: Stack, name: str, **fields: Any) -> str:
    """A one-second schedule of builtin.sleep (`fields`: its payload, timeout, ...), once one of its runs
    is in progress; its ID."""
    workflow = stack.api.ok("POST", "/api/v1/workflows/", {"name": "sleep", "task": "builtin.sleep"})
    schedule = stack.api.ok("POST", "/api/v1/schedules/", {
        "name": name, "workflow_id": workflow["id"], "interval_seconds": 1, **fields})
    wait_for(lambda: any(r["status"] == "running" for r in stack.api.runs(schedule["id"])), 20,
             what="a run to be in progress")
    return str(schedule["id"])


def test_sigterm_lets_the_running_link_finish_and_hand_off(stack):
    worker = stack.start_worker()
    schedule_id = _sleeping_schedule_running(stack, "long", trigger_payload={"seconds": 2})
    worker.popen.terminate()  # SIGTERM: warm shutdown
    worker.popen.wait(30)
    [run] = [r for r in stack.api.runs(schedule_id) if r["reason"] is None]  # not the ticks skipped meanwhile
    assert run["status"] == "succeeded"
    after = stack.api.ok("GET", f"/api/v1/schedules/{schedule_id}/")
    assert (after["status"], after["current_repeat"]) == ("active", 1)
    assert _pending_links(stack.env["REDIS_URL"]) == [f"sched-{schedule_id}-n1-rc0"]


def test_two_webs_and_three_workers_starting_at_once(stack, tmp_path):
    second_web, other = serve_api(stack.env, tmp_path / "web2.log", token=stack.api.token)
    try:
        workflow = stack.api.ok("POST", "/api/v1/workflows/", {"name": "noop", "task": "builtin.noop"})
        ids = [stack.api.ok("POST", "/api/v1/schedules/", {
            "name": f"r{i}", "workflow_id": workflow["id"], "interval_seconds": 1 + i % 2})["id"] for i in range(20)]
        workers = [stack.start_worker() for _ in range(3)]  # all three recover at once
        wait_for(lambda: all(len(other.runs(i)) >= 4 for i in ids), 40, interval=0.2,
                 what="every schedule to run four times")
        for schedule_id in ids:
            rows = other.runs(schedule_id)
            runs = [r for r in rows if r["reason"] is None]  # rows for ticks not run have a reason
            ticks = Counter((r["repeat_number"], r["retry_number"]) for r in runs)
            assert max(ticks.values()) == 1, ticks
            assert all(r["status"] in ("succeeded", "running") for r in runs), runs
            # ticks that came due before the workers were up (or while a slow first run went on) are rows of
            # their own, missed or skipped, never silently lost
            assert all(r["status"] in ("missed", "skipped") and r["ticks"] >= 1 for r in rows if r["reason"])
        pending = Counter(link.rsplit("-n", 1)[0] for link in _pending_links(stack.env["REDIS_URL"]))
        assert max(pending.values()) == 1  # never two pending links for one schedule
        assert all(w.alive() for w in workers)
    finally:
        second_web.stop()


def _owner_token(env: dict[str, str], name: str) -> str:
    """`flask owners create NAME`, as a user runs it: the new owner's token is the last line printed."""
    return flask_command(env, "owners", "create", name).strip().splitlines()[-1]


def test_two_owners_made_by_the_cli_each_see_only_their_own(stack):
    alice = Api(stack.api.base, _owner_token(stack.env, "alice"))
    bob = Api(stack.api.base, _owner_token(stack.env, "bob"))
    stack.start_worker()
    mine = {}
    for who, api in (("alice", alice), ("bob", bob)):
        workflow = api.ok("POST", "/api/v1/workflows/", {"name": who, "task": "builtin.noop"})
        schedule = api.ok("POST", "/api/v1/schedules/", {"name": who, "workflow_id": workflow["id"],
                                                          "interval_seconds": 1, "total_repeats": 2})
        mine[who] = (workflow["id"], schedule["id"])
    for api, own, other in ((alice, mine["alice"], mine["bob"]), (bob, mine["bob"], mine["alice"])):
        assert [s["id"] for s in api.ok("GET", "/api/v1/schedules/")["items"]] == [own[1]]
        assert [w["id"] for w in api.ok("GET", "/api/v1/workflows/")["items"]] == [own[0]]
        for method, path, body in (
            ("GET", f"/api/v1/schedules/{other[1]}/", None),
            ("PATCH", f"/api/v1/schedules/{other[1]}/", {"name": "mine now"}),
            ("POST", f"/api/v1/schedules/{other[1]}/pause/", None),
            ("POST", f"/api/v1/schedules/{other[1]}/resume/", None),
            ("GET", f"/api/v1/schedules/{other[1]}/runs/", None),
            ("GET", f"/api/v1/schedules/{other[1]}/events/", None),
            ("DELETE", f"/api/v1/schedules/{other[1]}/", None),
            ("GET", f"/api/v1/workflows/{other[0]}/", None),
            ("DELETE", f"/api/v1/workflows/{other[0]}/", None),
        ):
            status, payload = api.call(method, path, body)
            assert status == 404, (method, path, status, payload)
        assert api.ok("POST", "/api/v1/schedules/batch-delete/", {"schedule_ids": [other[1]]}) == {
            "deleted": [], "not_found": [other[1]]}
    assert {mine["alice"][1], mine["bob"][1]} <= {s["id"] for s in stack.api.ok("GET", "/api/v1/schedules/")["items"]}
    for who in ("alice", "bob"):  # nothing the other tried changed anything: both ran to the end
        wait_for(lambda w=who: stack.api.ok("GET", f"/api/v1/schedules/{mine[w][1]}/")["status"] == "done", 30,
                 what=f"{who}'s schedule to finish")
    status, _ = Api(stack.api.base, "recur_not-a-token-at-all-0000000000000").call("GET", "/api/v1/schedules/")
    assert status == 401


def _workers_listed(redis_url: str) -> list[Any]:
    from redis import Redis
    from rq import Worker

    return Worker.all(connection=Redis.from_url(redis_url))


@pytest.mark.parametrize("mode", [(), ("--fork",), ("--simple",)], ids=["default", "fork", "simple"])
def test_a_worker_rides_out_redis_going_away_in_the_middle_of_a_link(tmp_path, database_url, mode):
    """Redis goes away while a task runs and is still away when it ends (a crash, or a Sentinel failover
    in progress), then comes back empty. RQ's loop quits on any Redis error outside its dequeue; a Recur
    worker must not: it stays up, and the chain goes on once Redis is back (the reconciler puts the lost
    link back), no tick run twice."""
    (tmp_path / "redis").mkdir()
    redis = RedisServer(tmp_path / "redis")
    stack = Stack(tmp_path, redis, database_url)
    try:
        worker = stack.start_worker(*mode, slots=2)
        schedule_id = _sleeping_schedule_running(stack, "outage", trigger_payload={"seconds": 1}, timeout_seconds=10)
        redis.restart(down_seconds=3)  # the task ends while Redis is away
        back = datetime.now(UTC)

        def ran_again() -> bool:
            return any(r["status"] == "succeeded" and parse_instant(r["started_at"]) > back
                       for r in stack.api.runs(schedule_id))

        wait_for(ran_again, 30, interval=0.3, what="the chain to run again once Redis is back")
        assert worker.alive(), worker.output()[-3000:]
        # RQ registers a worker once, at birth: `rq info`, the console and recur_workers list it again only
        # if it writes its registration back when Redis comes back without it.
        slots = 2  # each of the worker's slots is an RQ worker of its own

        def relisted() -> list[Any]:
            listed = _workers_listed(redis.url)
            return listed if len(listed) == slots else []

        listed = wait_for(relisted, 10, what="the worker's slots to be listed again")
        assert [(w.queue_names(), w.birth_date is not None) for w in listed] == [(["recur"], True)] * slots
        runs = [r for r in stack.api.runs(schedule_id) if r["reason"] is None]
        ticks = Counter((r["repeat_number"], r["retry_number"]) for r in runs)
        assert max(ticks.values()) == 1, ticks
    finally:
        stack.stop()
        redis.stop()
        for log in sorted(tmp_path.glob("*.log")):
            print(f"----- {log.name} (last 40 lines)\n" + "\n".join(log.read_text(errors="replace").splitlines()[-40:]))


@pytest.mark.parametrize("mode", [(), ("--fork",), ("--simple",)], ids=["default", "fork", "simple"])
def test_a_worker_stopped_while_redis_is_away_exits_cleanly(tmp_path, database_url, mode):
    """SIGTERM (a deploy, a scale-down) while Redis is down: the worker cannot record its end in Redis (its
    registration expires by itself), and says so in one line; no traceback, exit status 0."""
    (tmp_path / "redis").mkdir()
    redis = RedisServer(tmp_path / "redis")
    stack = Stack(tmp_path, redis, database_url)
    try:
        worker = stack.start_worker(*mode)
        stack.wait_workers_ready()
        redis.stop()
        worker.popen.terminate()
        assert worker.popen.wait(30) == 0, worker.output()[-3000:]
        assert "Traceback" not in worker.output(), worker.output()[-3000:]
    finally:
        stack.stop()


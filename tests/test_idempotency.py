"""The event a task receives carries an idempotency key: one per tick, the same for each attempt of it."""

from __future__ import annotations

from pathlib import Path

from harness.chain_driver import make_schedule, step


def _attempts(path: Path) -> list[tuple[int, int, str]]:
    rows = [line.split() for line in path.read_text().splitlines()]
    return [(int(repeat), int(retry), key) for repeat, retry, key in rows]


def test_every_attempt_of_a_tick_sees_its_key_and_every_tick_another(chain_app, fake_clock, tmp_path):
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    for path in logs:
        make_schedule(fake_clock.now, task="tests.record_key", interval_seconds=10, total_repeats=2,
                      trigger_payload={"path": str(path), "failures": 1})
    for _ in range(8):
        step(chain_app, fake_clock)

    a, b = _attempts(logs[0]), _attempts(logs[1])
    assert [(repeat, retry) for repeat, retry, _ in a] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    keys = {(repeat, retry): key for repeat, retry, key in a}
    assert keys[0, 0] == keys[0, 1] and keys[1, 0] == keys[1, 1]  # a retry: the same key
    assert keys[0, 0] != keys[1, 0]  # the next tick: another
    assert {key for *_, key in a}.isdisjoint(key for *_, key in b)  # another schedule: others
    assert "None" not in keys.values()

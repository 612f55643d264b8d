"""How a worker's slots grow and shrink (recur_server.workers.slots.Slots.fit), decided from what the slots'
RQ workers say in Redis and the links waiting: the policy alone, with the starting and stopping of processes
recorded instead of done (tests/test_slots.py runs worker.py's real slots)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from rq.worker_pool import WorkerData

from recur_server.workers.slots import Slots


class Recorded(Slots):
    def __init__(self, redis: Any, most: int = 4, least: int = 1) -> None:
        super().__init__("w", most, lambda name, burst: None, redis, ["recur"], least, idle_seconds=60.0)
        self.status = self.Status.STARTED
        self.started: list[str] = []
        self.stopped: list[str] = []

    def start_worker(self, count: int | None = None, burst: bool = True, _sleep: float = 0,
                     logging_level: str = "INFO") -> None:
        self._started += 1
        name = f"w-{self._started}"
        self.started.append(name)
        self.worker_dict[name] = WorkerData(name=name, pid=0, process=SimpleNamespace(exitcode=0))  # type: ignore[arg-type]

    def stop_worker(self, worker_data: WorkerData, sig: Any = None) -> None:
        self.stopped.append(worker_data.name)


def states(redis: Any, **by_slot: tuple[str, int]) -> None:
    for slot, (state, done) in by_slot.items():
        redis.hset(f"rq:worker:w-{slot}", mapping={"state": state, "successful_job_count": done})


def test_slots_grow_while_all_are_busy_and_links_wait_up_to_the_most(fake_redis):
    slots = Recorded(fake_redis)
    slots.start_worker()
    states(fake_redis, **{"1": ("idle", 0)})
    fake_redis.rpush("rq:queue:recur", "a", "b")
    slots.fit(0.0)
    assert slots.started == ["w-1"]  # an idle slot takes the waiting links

    states(fake_redis, **{"1": ("busy", 0)})
    slots.fit(1.0)
    assert slots.started == ["w-1", "w-2", "w-3"] and slots.num_workers == 3  # one per waiting link

    states(fake_redis, **{"2": ("busy", 0), "3": ("busy", 0)})
    fake_redis.rpush("rq:queue:recur", "c", "d", "e")
    slots.fit(2.0)
    assert slots.started[-1] == "w-4" and len(slots.worker_dict) == 4  # never beyond the most
    states(fake_redis, **{"4": ("busy", 0)})
    slots.fit(3.0)
    assert len(slots.worker_dict) == 4


def test_a_slot_idle_for_a_minute_is_stopped_down_to_the_least_and_a_busy_one_never(fake_redis):
    slots = Recorded(fake_redis, least=2)
    for _ in range(3):
        slots.start_worker()
    slots.num_workers = 3  # grown under load earlier
    states(fake_redis, **{"1": ("busy", 5), "2": ("idle", 3), "3": ("idle", 1)})
    slots.fit(0.0)
    states(fake_redis, **{"2": ("idle", 4)})  # slot 2 took a task meanwhile; slot 1 is on one long task
    slots.fit(59.0)
    assert slots.stopped == []
    slots.fit(60.0)
    assert slots.stopped == ["w-3"] and slots.num_workers == 2
    slots.handle_dead_worker(slots.worker_dict["w-3"])  # it exits, and is not replaced
    slots.fit(200.0)
    assert slots.stopped == ["w-3"] and sorted(slots.worker_dict) == ["w-1", "w-2"]  # the least is kept

"""Everything a real redis-server holds, read back for comparison: what two ways of doing one thing left."""

from __future__ import annotations

from typing import Any

from redis import Redis

# What changes from one run to the next besides random IDs (in key names, values and members): clocks, the
# client's port, a worker's running totals of time.
VOLATILE = {b"created_at", b"last_heartbeat", b"birth", b"enqueued_at", b"ip_address", b"started_at",
            b"ended_at", b"total_working_time", b"execution_started_at", b"execution_ended_at"}


def redis_state(redis: Redis, *randoms: str) -> dict[bytes, Any]:
    """Each key: its type, its value (volatile fields as None, each of `randoms` as <0>, <1>, ...), whether it
    expires. A stream's entry IDs (times) are left out, its entries kept in order."""
    def plain(value: bytes) -> bytes:
        for index, random in enumerate(randoms):
            value = value.replace(random.encode(), f"<{index}>".encode())
        return value

    def fields(mapping: dict[bytes, bytes]) -> dict[bytes, bytes | None]:
        return {field: None if field in VOLATILE else plain(value) for field, value in mapping.items()}

    state: dict[bytes, Any] = {}
    for key in redis.keys("*"):
        kind = redis.type(key)
        if kind == b"hash":
            value: Any = fields(redis.hgetall(key))
        elif kind == b"zset":
            value = [plain(member) for member in redis.zrange(key, 0, -1)]
        elif kind == b"list":
            value = [plain(member) for member in redis.lrange(key, 0, -1)]
        elif kind == b"stream":
            value = [fields(entry) for _id, entry in redis.xrange(key)]
        elif kind == b"string":
            value = plain(redis.get(key) or b"")
        else:
            assert kind == b"set", (key, kind)
            value = sorted(plain(member) for member in redis.smembers(key))
        state[plain(key)] = (kind, value, redis.ttl(key) > 0)
    return state

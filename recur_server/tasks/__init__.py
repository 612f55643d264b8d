"""Task registry and built-in tasks."""

from recur_server.tasks.loading import load_task_modules
from recur_server.tasks.registry import TaskEvent, get_task, idempotency_key, task, task_names

__all__ = ["TaskEvent", "get_task", "idempotency_key", "load_task_modules", "task", "task_names"]

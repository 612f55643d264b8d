"""WSGI entry point of a checkout: `gunicorn wsgi:app` (where Recur is installed, `recur server`)."""

from recur.host_metrics import use_host_directory

use_host_directory()  # before the server's modules import prometheus-client

from recur_server.processes.wsgi import app  # noqa: E402

__all__ = ["app"]

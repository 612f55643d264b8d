"""WSGI entry point: `gunicorn wsgi:app`."""

from host_metrics import use_host_directory

use_host_directory()  # before app imports prometheus-client

from app import create_app  # noqa: E402
from app.services.schema import ensure_schema  # noqa: E402

app = create_app()
ensure_schema(app)

"""WSGI entry point: `gunicorn wsgi:app`."""

from app import create_app
from app.schema import ensure_schema

app = create_app()
ensure_schema(app)

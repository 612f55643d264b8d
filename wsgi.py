"""WSGI entry point: `gunicorn wsgi:app`."""

from app import create_app, ensure_schema

app = create_app()
ensure_schema(app)

"""The web console at `/`: server-rendered pages over the same service layer and scoped queries as the API
(app.schedules, app.auth.scope), signed in with an API token kept in a secure session cookie. The pages
beyond views.py live in modules of their own (one per subject), each registering its routes on the same
blueprint when imported here."""

from __future__ import annotations

from flask import Flask

from app.console import runs, session, times, workflow_pages  # noqa: F401  (runs, workflow_pages: their routes)
from app.console.views import console


def init_app(app: Flask) -> None:
    session.init_app(app)
    times.init_app(app)
    app.register_blueprint(console)

"""The web console at `/`: server-rendered pages over the same service layer and scoped queries as the API
(app.schedules, app.auth.scope), signed in with an API token kept in a secure session cookie."""

from __future__ import annotations

from flask import Flask

from app.console import session
from app.console.views import console


def init_app(app: Flask) -> None:
    session.init_app(app)
    app.register_blueprint(console)

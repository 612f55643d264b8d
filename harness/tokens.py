"""API tokens of the first admin (owner 1, which the migrations make) for tests, each helper named for what
it takes: an app of this process, the environment of real processes, or the `flask` commands a user runs."""

from __future__ import annotations

from typing import Any

from harness.servers import flask_command


def token_for_app(app: Any, name: str = "tests") -> str:
    """A new token of the first admin, issued in this process on `app`'s database as `flask tokens create
    admin` issues it; shown once, as there."""
    from recur_server.auth.models import Owner
    from recur_server.auth.tokens import issue
    from recur_server.infra.clock import utcnow
    from recur_server.infra.extensions import db

    with app.app_context():
        admin = db.session.get(Owner, 1)
        assert admin is not None, "the migrations make the first admin"
        secret: str = issue(admin, name, utcnow()).secret
        db.session.commit()
    return secret


def token_for_env(env: dict[str, str]) -> str:
    """A new token of the first admin for real processes' HTTP clients, on `env`'s DATABASE_URL: the schema
    brought up to date and the token issued in this process, as `flask init-db` and `flask tokens create
    admin` do. Each of those commands is a Python process that imports the whole app, seconds per test on a
    loaded machine; that they work as the README says is checked once (token_from_cli's test)."""
    from recur_server import create_app
    from recur_server.infra.extensions import db
    from recur_server.services.schema import ensure_schema

    app = create_app({"DATABASE_URL": env["DATABASE_URL"], "REDIS_URL": env.get("REDIS_URL", "redis://unused")})
    ensure_schema(app)
    try:
        return token_for_app(app, "test client")
    finally:
        with app.app_context():
            db.session.remove()
            db.engine.dispose()


def token_from_cli(env: dict[str, str]) -> str:
    """A new token of the first admin made with the `flask` commands a user runs against `env`'s database
    (`flask init-db`, then `flask tokens create admin`: the token is its last line)."""
    flask_command(env, "init-db")
    return flask_command(env, "tokens", "create", "admin", "--name", "test client").strip().splitlines()[-1]


def authorized_client(app: Any, token: str) -> Any:
    """`app`'s Flask test client, calling with `token`."""
    test_client = app.test_client()
    test_client.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    return test_client


def new_owner_token(app: Any, name: str, admin: bool = False) -> str:
    """The first token of a new owner named `name` (an admin with `admin`), made in `app`'s database; call it
    inside the app's context."""
    from recur_server.auth.models import Owner
    from recur_server.auth.tokens import issue
    from recur_server.infra import clock
    from recur_server.infra.extensions import db

    owner = Owner(name=name, is_admin=admin, created_at=clock.utcnow())
    db.session.add(owner)
    db.session.flush()
    secret: str = issue(owner, "t", clock.utcnow()).secret
    db.session.commit()
    return secret

"""owners.schedules_held: how many schedules each owner holds, kept by the database itself

The quota check of every create counted the owner's schedules: at a million schedules of one owner a create
took 46 ms at p50 on PostgreSQL, most of it that count. The count is now a column of the owner's row, moved
by triggers on scheduled_jobs (every insert and delete, a cascade's included, whatever the code path), and
filled here from the schedules there are. On PostgreSQL the triggers run once a statement, over its
transition table (an apply's insert of 1,000 rows updates the owner's row once); SQLite's run once a row.
A schedule's owner never changes, so an UPDATE of scheduled_jobs (every link makes two) fires nothing.

Revision ID: 0028
Revises: 0027
Create Date: 2026-11-30 09:20:00

"""
import sqlalchemy as sa
from alembic import op

revision = '0028'
down_revision = '0027'
branch_labels = None
depends_on = None

_POSTGRES = [
    """
    CREATE FUNCTION recur_schedules_held() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' THEN
        UPDATE owners SET schedules_held = schedules_held + moved.n
        FROM (SELECT owner_id, count(*) AS n FROM held_rows GROUP BY owner_id) AS moved
        WHERE owners.id = moved.owner_id;
      ELSE
        UPDATE owners SET schedules_held = schedules_held - moved.n
        FROM (SELECT owner_id, count(*) AS n FROM held_rows GROUP BY owner_id) AS moved
        WHERE owners.id = moved.owner_id;
      END IF;
      RETURN NULL;
    END $$
    """,
    "CREATE TRIGGER scheduled_jobs_held_insert AFTER INSERT ON scheduled_jobs REFERENCING NEW TABLE AS held_rows "
    "FOR EACH STATEMENT EXECUTE FUNCTION recur_schedules_held()",
    "CREATE TRIGGER scheduled_jobs_held_delete AFTER DELETE ON scheduled_jobs REFERENCING OLD TABLE AS held_rows "
    "FOR EACH STATEMENT EXECUTE FUNCTION recur_schedules_held()",
]
_SQLITE = [
    "CREATE TRIGGER scheduled_jobs_held_insert AFTER INSERT ON scheduled_jobs BEGIN "
    "UPDATE owners SET schedules_held = schedules_held + 1 WHERE id = NEW.owner_id; END",
    "CREATE TRIGGER scheduled_jobs_held_delete AFTER DELETE ON scheduled_jobs BEGIN "
    "UPDATE owners SET schedules_held = schedules_held - 1 WHERE id = OLD.owner_id; END",
]


def upgrade():
    op.add_column('owners', sa.Column('schedules_held', sa.Integer(), nullable=False, server_default='0'))
    op.execute("UPDATE owners SET schedules_held = "
               "(SELECT count(*) FROM scheduled_jobs WHERE scheduled_jobs.owner_id = owners.id)")
    for statement in _POSTGRES if op.get_bind().dialect.name == 'postgresql' else _SQLITE:
        op.execute(statement)


def downgrade():
    postgres = op.get_bind().dialect.name == 'postgresql'
    for trigger in ('scheduled_jobs_held_insert', 'scheduled_jobs_held_delete'):
        op.execute(f"DROP TRIGGER IF EXISTS {trigger}" + (" ON scheduled_jobs" if postgres else ""))
    if postgres:
        op.execute("DROP FUNCTION IF EXISTS recur_schedules_held()")
    with op.batch_alter_table('owners') as batch:
        batch.drop_column('schedules_held')

"""retention: a schedule's own keep_runs_days, and the indexes the pruning pass deletes through

keep_runs_days NULL (every existing schedule) means RECUR_KEEP_RUNS_DAYS. Each index serves one of
recur_server.services.retention's deletes, oldest first, as a range instead of a scan of the table: events by
occurred_at,
deliveries by event_id (an event goes once none of its deliveries is left), schedule_events by at,
finished backfills by finished_at, console sessions by expires_at. Runs go through the existing
(schedule_id, started_at) index, owner_events through its `at` index (0010).

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26 12:45:00

"""
import sqlalchemy as sa
from alembic import op

revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None

INDEXES = (
    ('ix_events_occurred_at', 'events', 'occurred_at'),
    ('ix_deliveries_event_id', 'deliveries', 'event_id'),
    ('ix_schedule_events_at', 'schedule_events', 'at'),
    ('ix_backfills_finished_at', 'backfills', 'finished_at'),
    ('ix_console_sessions_expires_at', 'console_sessions', 'expires_at'),
)


def upgrade():
    # A nullable column is a plain ALTER TABLE on SQLite too.
    with op.batch_alter_table('scheduled_jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('keep_runs_days', sa.Integer(), nullable=True))
    for name, table, column in INDEXES:
        op.create_index(name, table, [column], unique=False)


def downgrade():
    for name, table, _column in reversed(INDEXES):
        op.drop_index(name, table_name=table)
    with op.batch_alter_table('scheduled_jobs', schema=None) as batch_op:
        batch_op.drop_column('keep_runs_days')

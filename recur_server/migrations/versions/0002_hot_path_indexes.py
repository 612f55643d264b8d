"""indexes for the hot paths: schedules on (status, id) instead of status; runs.status unindexed

The reconciler walks active schedules in id order a batch at a time: with (status, id) each batch is
one index range (with status alone SQLite sorted every active row again per batch). No query looks
runs up by status, so its index only cost every claim and finish its upkeep.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 02:58:00

"""
from alembic import op

# revision identifiers, used by Alembic.
revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('scheduled_jobs', schema=None) as batch_op:
        batch_op.create_index('ix_scheduled_jobs_status_id', ['status', 'id'], unique=False)
        batch_op.drop_index('ix_scheduled_jobs_status')
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.drop_index('ix_runs_status')


def downgrade():
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.create_index('ix_runs_status', ['status'], unique=False)
    with op.batch_alter_table('scheduled_jobs', schema=None) as batch_op:
        batch_op.create_index('ix_scheduled_jobs_status', ['status'], unique=False)
        batch_op.drop_index('ix_scheduled_jobs_status_id')

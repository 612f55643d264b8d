"""an index of the schedules by status and next_run_at, for the reconciler's periodic pass

A periodic pass read every active schedule (2.7-3.1 s with 100,000 of them on PostgreSQL); it now reads those
due within its horizon, through this index, and sweeps every schedule only hourly.

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-29 15:00:00

"""
from alembic import op

revision = '0026'
down_revision = '0025'
branch_labels = None
depends_on = None


def upgrade():
    op.create_index('ix_scheduled_jobs_due', 'scheduled_jobs', ['status', 'next_run_at', 'id'])


def downgrade():
    op.drop_index('ix_scheduled_jobs_due', table_name='scheduled_jobs')

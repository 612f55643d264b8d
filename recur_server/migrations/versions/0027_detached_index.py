"""a partial index of the schedules with a detached run, by status and detached_since

The check runs every second in every process's watch loop and read every active schedule with an alert; it
now reads only those whose expected tick is past: by next_run_at through ix_scheduled_jobs_due (0026), by
detached_since through this (only the schedules with overlap allow_all or cancel_other and a run out of
the chain have a row in it: a link's UPDATE of any other schedule leaves it alone).

Revision ID: 0027
Revises: 0026
Create Date: 2026-11-29 15:45:00

"""
import sqlalchemy as sa
from alembic import op

revision = '0027'
down_revision = '0026'
branch_labels = None
depends_on = None

DETACHED = "detached_since IS NOT NULL"


def upgrade():
    op.create_index('ix_scheduled_jobs_detached', 'scheduled_jobs', ['status', 'detached_since'],
                    postgresql_where=sa.text(DETACHED), sqlite_where=sa.text(DETACHED))


def downgrade():
    op.drop_index('ix_scheduled_jobs_detached', table_name='scheduled_jobs')

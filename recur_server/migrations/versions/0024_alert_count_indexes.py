"""partial indexes for the late and the failing schedules, which every /metrics scrape counts

Without them each count read every schedule: 27-29 ms a count with 100,000 schedules on SQLite.

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-27 07:20:00

"""
import sqlalchemy as sa
from alembic import op

revision = '0024'
down_revision = '0023'
branch_labels = None
depends_on = None


def upgrade():
    op.create_index('ix_scheduled_jobs_late', 'scheduled_jobs', ['id'],
                    postgresql_where=sa.text("health = 'late'"), sqlite_where=sa.text("health = 'late'"))
    op.create_index('ix_scheduled_jobs_failing', 'scheduled_jobs', ['id'],
                    postgresql_where=sa.text('failing_since IS NOT NULL'),
                    sqlite_where=sa.text('failing_since IS NOT NULL'))


def downgrade():
    op.drop_index('ix_scheduled_jobs_failing', table_name='scheduled_jobs')
    op.drop_index('ix_scheduled_jobs_late', table_name='scheduled_jobs')

"""alerts on long and late runs and on failure streaks; the missed-run alert for detached runs

scheduled_jobs: long_after_seconds, late_after_seconds, failing_after (the settings), failing_streak and
failing_since (the streak and its alert), detached_since (the oldest tick whose run left the chain since the
last success, for overlap allow_all / cancel_other); runs: late_alerted_at, long_alerted_at (each alert at
most once per run); breaker_transitions (workflow_id, at) for a breaker's state at a time.

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-26 23:20:00

"""
import sqlalchemy as sa
from alembic import op

revision = '0023'
down_revision = '0022'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('scheduled_jobs') as batch:
        batch.add_column(sa.Column('detached_since', sa.DateTime(), nullable=True))
        batch.add_column(sa.Column('long_after_seconds', sa.Integer(), nullable=True))
        batch.add_column(sa.Column('late_after_seconds', sa.Integer(), nullable=True))
        batch.add_column(sa.Column('failing_after', sa.Integer(), nullable=True))
        batch.add_column(sa.Column('failing_streak', sa.Integer(), nullable=False, server_default='0'))
        batch.add_column(sa.Column('failing_since', sa.DateTime(), nullable=True))
    with op.batch_alter_table('runs') as batch:
        batch.add_column(sa.Column('late_alerted_at', sa.DateTime(), nullable=True))
        batch.add_column(sa.Column('long_alerted_at', sa.DateTime(), nullable=True))
    op.create_index('ix_breaker_transitions_workflow_at', 'breaker_transitions', ['workflow_id', 'at'])


def downgrade():
    op.drop_index('ix_breaker_transitions_workflow_at', table_name='breaker_transitions')
    with op.batch_alter_table('runs') as batch:
        batch.drop_column('long_alerted_at')
        batch.drop_column('late_alerted_at')
    with op.batch_alter_table('scheduled_jobs') as batch:
        batch.drop_column('failing_since')
        batch.drop_column('failing_streak')
        batch.drop_column('failing_after')
        batch.drop_column('late_after_seconds')
        batch.drop_column('long_after_seconds')
        batch.drop_column('detached_since')

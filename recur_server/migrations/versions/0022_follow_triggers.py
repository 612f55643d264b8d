"""runs that follow other runs

scheduled_jobs.after_*: the schedule whose runs' ends trigger this one, on which outcomes, after what delay,
within what window; runs.triggered_by_run_id: the upstream run of a triggered run; follow_triggers: each
trigger, written with the upstream run's outcome, unique on (downstream, upstream run).

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-26 23:15:00

"""
import sqlalchemy as sa
from alembic import op

revision = '0022'
down_revision = '0021'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('scheduled_jobs') as batch:
        batch.add_column(sa.Column('after_schedule_id', sa.String(length=36), nullable=True))
        batch.add_column(sa.Column('after_on', sa.String(length=16), nullable=True))
        batch.add_column(sa.Column('after_delay_seconds', sa.Integer(), nullable=True))
        batch.add_column(sa.Column('after_within', sa.String(length=32), nullable=True))
        batch.create_index('ix_scheduled_jobs_after_schedule_id', ['after_schedule_id'])
    with op.batch_alter_table('runs') as batch:
        batch.add_column(sa.Column('triggered_by_run_id', sa.String(length=36), nullable=True))
    op.create_table(
        'follow_triggers',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('downstream_id', sa.String(length=36), nullable=False),
        sa.Column('upstream_schedule_id', sa.String(length=36), nullable=False),
        sa.Column('upstream_run_id', sa.String(length=36), nullable=False),
        sa.Column('upstream_status', sa.String(length=16), nullable=False),
        sa.Column('due_at', sa.DateTime(), nullable=False),
        sa.Column('status', sa.String(length=16), nullable=False),
        sa.Column('attempt', sa.Integer(), nullable=False),
        sa.Column('run_id', sa.String(length=36), nullable=False),
        sa.Column('reason', sa.String(length=32), nullable=True),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(['downstream_id'], ['scheduled_jobs.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('downstream_id', 'upstream_run_id', name='uq_follow_triggers_run'),
        sqlite_autoincrement=True,
    )
    op.create_index('ix_follow_triggers_pending', 'follow_triggers', ['status', 'due_at'])
    op.create_index('ix_follow_triggers_downstream_id', 'follow_triggers', ['downstream_id'])
    op.create_index('ix_follow_triggers_run_id', 'follow_triggers', ['run_id'])
    op.create_index('ix_follow_triggers_created_at', 'follow_triggers', ['created_at'])


def downgrade():
    op.drop_table('follow_triggers')
    with op.batch_alter_table('runs') as batch:
        batch.drop_column('triggered_by_run_id')
    with op.batch_alter_table('scheduled_jobs') as batch:
        batch.drop_index('ix_scheduled_jobs_after_schedule_id')
        batch.drop_column('after_within')
        batch.drop_column('after_delay_seconds')
        batch.drop_column('after_on')
        batch.drop_column('after_schedule_id')

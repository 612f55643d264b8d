"""Runs and time: catch-up and overlap per schedule, concurrency per workflow, run triggers, backfills,
trigger idempotency keys

Existing schedules get catch_up "latest" and overlap "skip"; existing runs get trigger "schedule".

Revision ID: 0008
Revises: 0006
Create Date: 2026-11-24 10:10:00

"""
import sqlalchemy as sa
from alembic import op

revision = '0008'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('scheduled_jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('catch_up', sa.String(length=16), server_default='latest', nullable=False))
        batch_op.add_column(sa.Column('catch_up_window_seconds', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('catch_up_limit', sa.Integer(), server_default='100', nullable=False))
        batch_op.add_column(sa.Column('overlap', sa.String(length=16), server_default='skip', nullable=False))
        batch_op.add_column(sa.Column('run_through', sa.DateTime(), nullable=True))
        batch_op.add_column(sa.Column('backlog', sa.String(length=16), nullable=True))
    with op.batch_alter_table('workflows', schema=None) as batch_op:
        batch_op.add_column(sa.Column('max_concurrent_runs', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('concurrency_policy', sa.String(length=16), server_default='wait',
                                      nullable=False))
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.alter_column('repeat_number', existing_type=sa.Integer(), nullable=True)
        batch_op.add_column(sa.Column('trigger', sa.String(length=16), server_default='schedule', nullable=False))
        batch_op.add_column(sa.Column('reason', sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column('ticks', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('backfill_id', sa.String(length=36), nullable=True))
    op.create_index('ix_runs_running', 'runs', ['schedule_id'], unique=False,
                    postgresql_where=sa.text("status = 'running'"), sqlite_where=sa.text("status = 'running'"))
    op.create_table(
        'backfills',
        sa.Column('id', sa.String(length=36), nullable=False),
        sa.Column('schedule_id', sa.String(length=36), nullable=False),
        sa.Column('start_at', sa.DateTime(), nullable=False),
        sa.Column('end_at', sa.DateTime(), nullable=False),
        sa.Column('overlap', sa.String(length=16), nullable=True),
        sa.Column('times', sa.JSON(), nullable=False),
        sa.Column('total', sa.Integer(), nullable=False),
        sa.Column('started', sa.Integer(), nullable=False),
        sa.Column('status', sa.String(length=16), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('finished_at', sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(['schedule_id'], ['scheduled_jobs.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('ix_backfills_schedule_id', 'backfills', ['schedule_id'], unique=False)
    op.create_table(
        'trigger_requests',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('owner_id', sa.Integer(), nullable=False),
        sa.Column('idempotency_key', sa.String(length=200), nullable=False),
        sa.Column('schedule_id', sa.String(length=36), nullable=False),
        sa.Column('run_id', sa.String(length=36), nullable=False),
        sa.Column('scheduled_for', sa.DateTime(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(['owner_id'], ['owners.id'], ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['schedule_id'], ['scheduled_jobs.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('owner_id', 'idempotency_key', name='uq_trigger_requests_key'),
    )


def downgrade():
    op.drop_table('trigger_requests')
    op.drop_index('ix_backfills_schedule_id', table_name='backfills')
    op.drop_table('backfills')
    op.drop_index('ix_runs_running', table_name='runs')
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.drop_column('backfill_id')
        batch_op.drop_column('ticks')
        batch_op.drop_column('reason')
        batch_op.drop_column('trigger')
        batch_op.alter_column('repeat_number', existing_type=sa.Integer(), nullable=False)
    with op.batch_alter_table('workflows', schema=None) as batch_op:
        batch_op.drop_column('concurrency_policy')
        batch_op.drop_column('max_concurrent_runs')
    with op.batch_alter_table('scheduled_jobs', schema=None) as batch_op:
        batch_op.drop_column('backlog')
        batch_op.drop_column('run_through')
        batch_op.drop_column('overlap')
        batch_op.drop_column('catch_up_limit')
        batch_op.drop_column('catch_up_window_seconds')
        batch_op.drop_column('catch_up')

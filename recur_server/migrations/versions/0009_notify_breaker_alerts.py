"""Webhooks with an outbox of events and a delivery log; a circuit breaker per workflow with its history;
missed-run alerts per schedule

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-24 10:05:00

"""
import sqlalchemy as sa
from alembic import op

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('workflows', schema=None) as batch_op:
        batch_op.add_column(sa.Column('breaker_threshold', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('breaker_reset_seconds', sa.Integer(), server_default='300', nullable=False))
        batch_op.add_column(sa.Column('breaker_state', sa.String(length=16), server_default='closed', nullable=False))
        batch_op.add_column(sa.Column('breaker_failures', sa.Integer(), server_default='0', nullable=False))
        batch_op.add_column(sa.Column('breaker_opened_at', sa.DateTime(), nullable=True))
        batch_op.add_column(sa.Column('breaker_probe_run_id', sa.String(length=36), nullable=True))
    with op.batch_alter_table('scheduled_jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('alert_after_seconds', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('health', sa.String(length=8), server_default='ok', nullable=False))
        batch_op.add_column(sa.Column('late_since', sa.DateTime(), nullable=True))
    op.create_table(
        'breaker_transitions',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('workflow_id', sa.Integer(), nullable=False),
        sa.Column('from_state', sa.String(length=16), nullable=False),
        sa.Column('to_state', sa.String(length=16), nullable=False),
        sa.Column('at', sa.DateTime(), nullable=False),
        sa.Column('reason', sa.Text(), nullable=False),
        sa.Column('by', sa.String(length=200), nullable=False),
        sa.ForeignKeyConstraint(['workflow_id'], ['workflows.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('ix_breaker_transitions_workflow_id', 'breaker_transitions', ['workflow_id'], unique=False)
    op.create_table(
        'webhooks',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('owner_id', sa.Integer(), nullable=False),
        sa.Column('url', sa.String(length=2000), nullable=False),
        sa.Column('event_types', sa.JSON(), nullable=False),
        sa.Column('secret', sa.String(length=200), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(['owner_id'], ['owners.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('ix_webhooks_owner_id', 'webhooks', ['owner_id'], unique=False)
    op.create_table(
        'events',
        sa.Column('id', sa.String(length=40), nullable=False),
        sa.Column('owner_id', sa.Integer(), nullable=False),
        sa.Column('type', sa.String(length=40), nullable=False),
        sa.Column('occurred_at', sa.DateTime(), nullable=False),
        sa.Column('data', sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('ix_events_owner_id', 'events', ['owner_id'], unique=False)
    op.create_table(
        'deliveries',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('webhook_id', sa.Integer(), nullable=False),
        sa.Column('event_id', sa.String(length=40), nullable=False),
        sa.Column('status', sa.String(length=16), nullable=False),
        sa.Column('attempts', sa.Integer(), nullable=False),
        sa.Column('next_attempt_at', sa.DateTime(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('delivered_at', sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(['event_id'], ['events.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('webhook_id', 'event_id', name='uq_deliveries_webhook_event'),
    )
    op.create_index('ix_deliveries_due', 'deliveries', ['status', 'next_attempt_at'], unique=False)
    op.create_index('ix_deliveries_webhook_id', 'deliveries', ['webhook_id'], unique=False)
    op.create_table(
        'delivery_attempts',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('delivery_id', sa.Integer(), nullable=False),
        sa.Column('webhook_id', sa.Integer(), nullable=False),
        sa.Column('event_id', sa.String(length=40), nullable=False),
        sa.Column('event_type', sa.String(length=40), nullable=False),
        sa.Column('attempt', sa.Integer(), nullable=False),
        sa.Column('at', sa.DateTime(), nullable=False),
        sa.Column('status_code', sa.Integer(), nullable=True),
        sa.Column('duration_ms', sa.Integer(), nullable=False),
        sa.Column('error', sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(['delivery_id'], ['deliveries.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('ix_delivery_attempts_delivery_id', 'delivery_attempts', ['delivery_id'], unique=False)
    op.create_index('ix_delivery_attempts_webhook_id', 'delivery_attempts', ['webhook_id'], unique=False)


def downgrade():
    op.drop_table('delivery_attempts')
    op.drop_table('deliveries')
    op.drop_table('events')
    op.drop_table('webhooks')
    op.drop_table('breaker_transitions')
    with op.batch_alter_table('scheduled_jobs', schema=None) as batch_op:
        batch_op.drop_column('late_since')
        batch_op.drop_column('health')
        batch_op.drop_column('alert_after_seconds')
    with op.batch_alter_table('workflows', schema=None) as batch_op:
        batch_op.drop_column('breaker_probe_run_id')
        batch_op.drop_column('breaker_opened_at')
        batch_op.drop_column('breaker_failures')
        batch_op.drop_column('breaker_state')
        batch_op.drop_column('breaker_reset_seconds')
        batch_op.drop_column('breaker_threshold')

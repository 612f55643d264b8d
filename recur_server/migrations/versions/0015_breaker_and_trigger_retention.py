"""retention for the circuit breakers' history and for trigger requests' Idempotency-Keys

breaker_transitions go with the audit trail (RECUR_KEEP_AUDIT_DAYS), trigger_requests with the runs they
name (RECUR_KEEP_RUNS_DAYS): each needs an index on its time, so pruning deletes its oldest rows through
an index, a batch at a time.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-26 18:20:00

"""
from alembic import op

revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None


def upgrade():
    op.create_index('ix_breaker_transitions_at', 'breaker_transitions', ['at'], unique=False)
    op.create_index('ix_trigger_requests_created_at', 'trigger_requests', ['created_at'], unique=False)


def downgrade():
    op.drop_index('ix_trigger_requests_created_at', table_name='trigger_requests')
    op.drop_index('ix_breaker_transitions_at', table_name='breaker_transitions')

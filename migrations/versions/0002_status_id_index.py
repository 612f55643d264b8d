"""schedules: index (status, id) for the reconciler's batched walk, instead of status alone

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


def downgrade():
    with op.batch_alter_table('scheduled_jobs', schema=None) as batch_op:
        batch_op.create_index('ix_scheduled_jobs_status', ['status'], unique=False)
        batch_op.drop_index('ix_scheduled_jobs_status_id')

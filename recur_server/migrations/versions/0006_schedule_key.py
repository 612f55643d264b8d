"""schedules: an optional key, the owner's own name for a schedule (unique per owner; NULL for existing rows)

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24 06:40:00

"""
import sqlalchemy as sa
from alembic import op

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('scheduled_jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('key', sa.String(length=200), nullable=True))
        batch_op.create_unique_constraint('uq_scheduled_jobs_owner_key', ['owner_id', 'key'])


def downgrade():
    with op.batch_alter_table('scheduled_jobs', schema=None) as batch_op:
        batch_op.drop_constraint('uq_scheduled_jobs_owner_key', type_='unique')
        batch_op.drop_column('key')

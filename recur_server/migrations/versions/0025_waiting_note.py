"""a schedule's waiting note: why its due tick waits instead of running (no worker that knows its task, its
workflow's runs all going, a run of its own going); cleared when a tick is claimed

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-29 05:40:00

"""
import sqlalchemy as sa
from alembic import op

revision = '0025'
down_revision = '0024'
branch_labels = None
depends_on = None


def upgrade():
    op.add_column('scheduled_jobs', sa.Column('waiting_note', sa.Text(), nullable=True))


def downgrade():
    op.drop_column('scheduled_jobs', 'waiting_note')

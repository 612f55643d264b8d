"""a workflow's own RQ queue

A workflow may name the queue its schedules' links go through (NULL: RECUR_QUEUE). Each schedule keeps a
copy of its workflow's choice, so that every path that puts a link reads it with the schedule's row.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-26 18:40:00

"""
import sqlalchemy as sa
from alembic import op

revision = '0017'
down_revision = '0016'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('workflows') as batch:
        batch.add_column(sa.Column('queue', sa.String(length=64), nullable=True))
    with op.batch_alter_table('scheduled_jobs') as batch:
        batch.add_column(sa.Column('queue', sa.String(length=64), nullable=True))


def downgrade():
    with op.batch_alter_table('scheduled_jobs') as batch:
        batch.drop_column('queue')
    with op.batch_alter_table('workflows') as batch:
        batch.drop_column('queue')

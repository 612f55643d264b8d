"""schedules: on_exhausted (what to do when a tick's retries run out), and pause_note / paused_at

Existing schedules keep today's behaviour: on_exhausted is "dead" (the server default fills their rows).

Revision ID: 0005
Revises: 0003
Create Date: 2026-11-24 06:00:00

"""
import sqlalchemy as sa
from alembic import op

revision = '0005'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('scheduled_jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('on_exhausted', sa.String(length=16), server_default='dead', nullable=False))
        batch_op.add_column(sa.Column('pause_note', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('paused_at', sa.DateTime(), nullable=True))


def downgrade():
    with op.batch_alter_table('scheduled_jobs', schema=None) as batch_op:
        batch_op.drop_column('paused_at')
        batch_op.drop_column('pause_note')
        batch_op.drop_column('on_exhausted')

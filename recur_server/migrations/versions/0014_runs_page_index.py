"""a schedule's runs in one total order through one index: (schedule_id, started_at, id)

A page of a schedule's runs is read newest first after a cursor (the last row's started_at and id):
with id in the index the order is total and the page is one index range, however long the history;
the count behind a page's `total` reads the index alone. Every former use of the index (retention's
oldest and newest runs, recent runs) reads its (schedule_id, started_at) prefix as before.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-26 16:20:00

"""
from alembic import op

revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None


def upgrade():
    op.drop_index('ix_runs_schedule_started', table_name='runs')
    op.create_index('ix_runs_schedule_started', 'runs', ['schedule_id', 'started_at', 'id'], unique=False)


def downgrade():
    op.drop_index('ix_runs_schedule_started', table_name='runs')
    op.create_index('ix_runs_schedule_started', 'runs', ['schedule_id', 'started_at'], unique=False)

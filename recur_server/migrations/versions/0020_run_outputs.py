"""what a run's task left behind

run_outputs: a run's traceback, captured output, log lines and return value, bounded, deleted with its run.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-26 22:50:00

"""
import sqlalchemy as sa
from alembic import op

revision = '0020'
down_revision = '0019'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'run_outputs',
        sa.Column('run_id', sa.String(length=36), nullable=False),
        sa.Column('traceback', sa.Text(), nullable=True),
        sa.Column('output', sa.Text(), nullable=True),
        sa.Column('logs', sa.Text(), nullable=True),
        sa.Column('result', sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('run_id'),
    )


def downgrade():
    op.drop_table('run_outputs')

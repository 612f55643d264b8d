"""the keys of schedules declared in code

declared_keys: the (owner, key) pairs `flask declarations sync` made; a keyed schedule without one was
made through the API and sync leaves it alone.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-26 19:40:00

"""
import sqlalchemy as sa
from alembic import op

revision = '0019'
down_revision = '0018'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'declared_keys',
        sa.Column('owner_id', sa.Integer(), nullable=False),
        sa.Column('key', sa.String(length=200), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint('owner_id', 'key'),
    )


def downgrade():
    op.drop_table('declared_keys')

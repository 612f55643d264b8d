"""a delivery sent again by hand

deliveries.redelivered_at: when an owner last asked for it to be sent again (its day of attempts counts
from then); delivery_attempts.requested_by: set on the log's entry for such a request (who asked).

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-26 18:50:00

"""
import sqlalchemy as sa
from alembic import op

revision = '0018'
down_revision = '0017'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('deliveries') as batch:
        batch.add_column(sa.Column('redelivered_at', sa.DateTime(), nullable=True))
    with op.batch_alter_table('delivery_attempts') as batch:
        batch.add_column(sa.Column('requested_by', sa.String(length=200), nullable=True))


def downgrade():
    with op.batch_alter_table('delivery_attempts') as batch:
        batch.drop_column('requested_by')
    with op.batch_alter_table('deliveries') as batch:
        batch.drop_column('redelivered_at')

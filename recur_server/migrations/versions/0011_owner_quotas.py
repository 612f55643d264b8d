"""owners: per-owner quota overrides (schedules, webhooks, active tokens) an admin may set

NULL, every existing owner's value, means the RECUR_MAX_*_PER_OWNER default (recur_server.services.quotas).

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-26 13:00:00

"""
import sqlalchemy as sa
from alembic import op

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None

QUOTA_COLUMNS = ('max_schedules', 'max_webhooks', 'max_tokens')


def upgrade():
    # Adding nullable columns is a plain ALTER TABLE on SQLite too: the table (and its AUTOINCREMENT) stays.
    with op.batch_alter_table('owners', schema=None) as batch_op:
        for column in QUOTA_COLUMNS:
            batch_op.add_column(sa.Column(column, sa.Integer(), nullable=True))


def downgrade():
    sqlite = op.get_bind().dialect.name == 'sqlite'
    # Dropping a column recreates the table on SQLite: keep its ids never reused (0010).
    with op.batch_alter_table('owners', schema=None, recreate='always' if sqlite else 'auto',
                              table_kwargs={'sqlite_autoincrement': True}) as batch_op:
        for column in reversed(QUOTA_COLUMNS):
            batch_op.drop_column(column)

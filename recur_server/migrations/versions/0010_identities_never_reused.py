"""Identities are never reused: SQLite's integer ids AUTOINCREMENT (PostgreSQL's sequences never go back);
console sessions bound to a secret kept as a digest; deliveries carry their event's owner and a reason;
the admins' record of owners made and deleted; the orphans a deleted owner left behind are removed

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-26 12:10:00

"""
import sqlalchemy as sa
from alembic import op

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None

# Every table whose primary key is an integer: without AUTOINCREMENT SQLite hands the highest deleted id to
# the next row, so a cookie, cache or log line holding it would name someone else's row.
INTEGER_ID_TABLES = ('owners', 'api_tokens', 'schedule_events', 'workflows', 'breaker_transitions',
                     'trigger_requests', 'webhooks', 'delivery_attempts')


def upgrade():
    sqlite = op.get_bind().dialect.name == 'sqlite'
    # What a deleted owner left behind (deliveries and attempts had no foreign key to their owner).
    op.execute("DELETE FROM events WHERE owner_id NOT IN (SELECT id FROM owners)")
    op.execute("DELETE FROM deliveries WHERE event_id NOT IN (SELECT id FROM events)"
               " OR webhook_id NOT IN (SELECT id FROM webhooks)")
    op.execute("DELETE FROM deliveries WHERE webhook_id NOT IN"
               " (SELECT w.id FROM webhooks w JOIN events e ON e.owner_id = w.owner_id"
               "  WHERE e.id = deliveries.event_id)")
    op.execute("DELETE FROM delivery_attempts WHERE delivery_id NOT IN (SELECT id FROM deliveries)")

    with op.batch_alter_table('deliveries', schema=None) as batch_op:
        batch_op.add_column(sa.Column('owner_id', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('reason', sa.Text(), nullable=True))
    op.execute("UPDATE deliveries SET owner_id = (SELECT owner_id FROM events WHERE events.id = deliveries.event_id)")
    with op.batch_alter_table('deliveries', schema=None, recreate='always' if sqlite else 'auto',
                              table_kwargs={'sqlite_autoincrement': True}) as batch_op:
        batch_op.alter_column('owner_id', existing_type=sa.Integer(), nullable=False)
        batch_op.create_index('ix_deliveries_owner_due', ['status', 'owner_id', 'next_attempt_at'], unique=False)

    if sqlite:
        for table in INTEGER_ID_TABLES:
            with op.batch_alter_table(table, recreate='always', table_kwargs={'sqlite_autoincrement': True}):
                pass

    op.create_table(
        'console_sessions',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('token_id', sa.Integer(), nullable=False),
        sa.Column('digest', sa.String(length=64), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('expires_at', sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(['token_id'], ['api_tokens.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('digest'),
        sqlite_autoincrement=True,
    )
    op.create_index('ix_console_sessions_token_id', 'console_sessions', ['token_id'], unique=False)
    op.create_table(
        'owner_events',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('owner_id', sa.Integer(), nullable=False),
        sa.Column('owner_name', sa.String(length=200), nullable=False),
        sa.Column('actor_id', sa.Integer(), nullable=True),
        sa.Column('actor_name', sa.String(length=200), nullable=False),
        sa.Column('action', sa.String(length=32), nullable=False),
        sa.Column('at', sa.DateTime(), nullable=False),
        sa.Column('changes', sa.JSON(), nullable=True),
        sa.PrimaryKeyConstraint('id'),
        sqlite_autoincrement=True,
    )
    op.create_index('ix_owner_events_at', 'owner_events', ['at'], unique=False)


def downgrade():
    op.drop_index('ix_owner_events_at', table_name='owner_events')
    op.drop_table('owner_events')
    op.drop_index('ix_console_sessions_token_id', table_name='console_sessions')
    op.drop_table('console_sessions')
    with op.batch_alter_table('deliveries', schema=None) as batch_op:
        batch_op.drop_index('ix_deliveries_owner_due')
        batch_op.drop_column('reason')
        batch_op.drop_column('owner_id')

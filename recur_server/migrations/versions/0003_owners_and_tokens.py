"""owners, API tokens and the schedule audit trail; every workflow and schedule gets an owner

Rows that exist before this migration belong to a first admin owner, "admin", which it creates.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23 23:10:00

"""
import sqlalchemy as sa
from alembic import op

from recur_server.infra import clock

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade():
    owners = op.create_table(
        'owners',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('name', sa.String(length=200), nullable=False),
        sa.Column('is_admin', sa.Boolean(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('name'),
    )
    op.create_table(
        'api_tokens',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('owner_id', sa.Integer(), nullable=False),
        sa.Column('name', sa.String(length=200), nullable=False),
        sa.Column('prefix', sa.String(length=16), nullable=False),
        sa.Column('digest', sa.String(length=64), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('last_used_at', sa.DateTime(), nullable=True),
        sa.Column('expires_at', sa.DateTime(), nullable=True),
        sa.Column('revoked_at', sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(['owner_id'], ['owners.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('digest'),
    )
    with op.batch_alter_table('api_tokens', schema=None) as batch_op:
        batch_op.create_index('ix_api_tokens_owner_id', ['owner_id'], unique=False)
    op.create_table(
        'schedule_events',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('schedule_id', sa.String(length=36), nullable=False),
        sa.Column('owner_id', sa.Integer(), nullable=False),
        sa.Column('actor_id', sa.Integer(), nullable=True),
        sa.Column('actor_name', sa.String(length=200), nullable=False),
        sa.Column('action', sa.String(length=32), nullable=False),
        sa.Column('at', sa.DateTime(), nullable=False),
        sa.Column('changes', sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(['actor_id'], ['owners.id'], ondelete='SET NULL'),
        sa.ForeignKeyConstraint(['owner_id'], ['owners.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
    )
    with op.batch_alter_table('schedule_events', schema=None) as batch_op:
        batch_op.create_index('ix_schedule_events_schedule_id', ['schedule_id'], unique=False)
        batch_op.create_index('ix_schedule_events_owner_id', ['owner_id'], unique=False)

    now = clock.utcnow().replace(tzinfo=None)
    op.bulk_insert(owners, [{'id': 1, 'name': 'admin', 'is_admin': True, 'created_at': now}])
    if op.get_bind().dialect.name == 'postgresql':  # the explicit id did not advance the sequence
        op.execute("SELECT setval(pg_get_serial_sequence('owners', 'id'), 1)")

    for table in ('workflows', 'scheduled_jobs'):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column('owner_id', sa.Integer(), nullable=True))
        op.execute(f'UPDATE {table} SET owner_id = 1')
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.alter_column('owner_id', existing_type=sa.Integer(), nullable=False)
            batch_op.create_index(f'ix_{table}_owner_id', ['owner_id'], unique=False)
            batch_op.create_foreign_key(f'fk_{table}_owner_id', 'owners', ['owner_id'], ['id'], ondelete='CASCADE')


def downgrade():
    for table in ('scheduled_jobs', 'workflows'):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_constraint(f'fk_{table}_owner_id', type_='foreignkey')
            batch_op.drop_index(f'ix_{table}_owner_id')
            batch_op.drop_column('owner_id')
    op.drop_table('schedule_events')
    op.drop_table('api_tokens')
    op.drop_table('owners')

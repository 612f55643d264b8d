"""A schedule's audit trail outlives its owner: schedule_events.owner_id loses its cascading foreign key,
so deleting an owner leaves the record of who made, changed and deleted their schedules, for admins

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-26 12:20:00

"""
import sqlalchemy as sa
from alembic import op

revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None


def _events(with_owner_key: bool) -> sa.Table:
    """schedule_events as it stands after 0010 (AUTOINCREMENT), with or without the owner's foreign key."""
    keys = [sa.ForeignKeyConstraint(['actor_id'], ['owners.id'], ondelete='SET NULL')]
    if with_owner_key:
        keys.append(sa.ForeignKeyConstraint(['owner_id'], ['owners.id'], ondelete='CASCADE'))
    return sa.Table(
        'schedule_events', sa.MetaData(),
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('schedule_id', sa.String(length=36), nullable=False),
        sa.Column('owner_id', sa.Integer(), nullable=False),
        sa.Column('actor_id', sa.Integer(), nullable=True),
        sa.Column('actor_name', sa.String(length=200), nullable=False),
        sa.Column('action', sa.String(length=32), nullable=False),
        sa.Column('at', sa.DateTime(), nullable=False),
        sa.Column('changes', sa.JSON(), nullable=True),
        *keys,
        sa.PrimaryKeyConstraint('id'),
        sa.Index('ix_schedule_events_schedule_id', 'schedule_id'),
        sa.Index('ix_schedule_events_owner_id', 'owner_id'),
        sqlite_autoincrement=True,
    )


def upgrade():
    if op.get_bind().dialect.name == 'sqlite':  # SQLite's keys have no names: rebuild the table without it
        with op.batch_alter_table('schedule_events', recreate='always', copy_from=_events(False)):
            pass
    else:
        op.drop_constraint('schedule_events_owner_id_fkey', 'schedule_events', type_='foreignkey')


def downgrade():
    op.execute("DELETE FROM schedule_events WHERE owner_id NOT IN (SELECT id FROM owners)")
    if op.get_bind().dialect.name == 'sqlite':
        with op.batch_alter_table('schedule_events', recreate='always', copy_from=_events(True)):
            pass
    else:
        op.create_foreign_key('schedule_events_owner_id_fkey', 'schedule_events', 'owners', ['owner_id'], ['id'],
                              ondelete='CASCADE')

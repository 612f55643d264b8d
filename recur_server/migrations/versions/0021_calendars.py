"""named calendars

calendars: an owner's named set of dates (a country's holidays of some years, dates listed by hand, dates
removed by hand) and what they expand to; scheduled_jobs.calendar_id and on_calendar: the calendar a
schedule skips or shifts its ticks off.

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-26 23:00:00

"""
import sqlalchemy as sa
from alembic import op

revision = '0021'
down_revision = '0020'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'calendars',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('owner_id', sa.Integer(), nullable=False),
        sa.Column('name', sa.String(length=200), nullable=False),
        sa.Column('country', sa.String(length=8), nullable=True),
        sa.Column('subdivision', sa.String(length=64), nullable=True),
        sa.Column('first_year', sa.Integer(), nullable=False),
        sa.Column('last_year', sa.Integer(), nullable=False),
        sa.Column('dates', sa.JSON(), nullable=False),
        sa.Column('removed', sa.JSON(), nullable=False),
        sa.Column('days', sa.JSON(), nullable=False),
        sa.Column('version', sa.Integer(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(['owner_id'], ['owners.id'], name='fk_calendars_owner_id', ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('owner_id', 'name', name='uq_calendars_owner_name'),
        sqlite_autoincrement=True,
    )
    op.create_index('ix_calendars_owner', 'calendars', ['owner_id', 'id'])
    with op.batch_alter_table('scheduled_jobs') as batch:
        batch.add_column(sa.Column('calendar_id', sa.Integer(), nullable=True))
        batch.add_column(sa.Column('on_calendar', sa.String(length=16), nullable=True))
        batch.create_foreign_key('fk_scheduled_jobs_calendar_id', 'calendars', ['calendar_id'], ['id'])
        batch.create_index('ix_scheduled_jobs_calendar_id', ['calendar_id'])


def downgrade():
    with op.batch_alter_table('scheduled_jobs') as batch:
        batch.drop_index('ix_scheduled_jobs_calendar_id')
        batch.drop_constraint('fk_scheduled_jobs_calendar_id', type_='foreignkey')
        batch.drop_column('on_calendar')
        batch.drop_column('calendar_id')
    op.drop_index('ix_calendars_owner', table_name='calendars')
    op.drop_table('calendars')

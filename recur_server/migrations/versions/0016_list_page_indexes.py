"""every list in one total order through one index: a page after a cursor is one index range

Each list is read a page at a time after a cursor (the last row's sort key), its `total` counted up to
10,000 entries of the same index: the schedules list (owner_id, created_at, id) and, for an admin's
whole list, (created_at, id); an owner's workflows (owner_id, id); a schedule's backfills (schedule_id,
created_at, id) and its audit trail (schedule_id, at, id); a webhook's delivery attempts (webhook_id, id)
and its pending deliveries (webhook_id, status). Each replaces the index on its leading column alone,
whose every former use reads the new index's prefix.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-26 19:00:00

"""
from alembic import op

revision = '0016'
down_revision = '0015'
branch_labels = None
depends_on = None

# (table, old index on the leading column, new index, its columns); None: nothing replaced.
_INDEXES = [
    ('scheduled_jobs', 'ix_scheduled_jobs_owner_id', 'ix_scheduled_jobs_owner_created',
     ['owner_id', 'created_at', 'id']),
    ('scheduled_jobs', None, 'ix_scheduled_jobs_created', ['created_at', 'id']),
    ('workflows', 'ix_workflows_owner_id', 'ix_workflows_owner', ['owner_id', 'id']),
    ('backfills', 'ix_backfills_schedule_id', 'ix_backfills_schedule_created', ['schedule_id', 'created_at', 'id']),
    ('schedule_events', 'ix_schedule_events_schedule_id', 'ix_schedule_events_schedule_at',
     ['schedule_id', 'at', 'id']),
    ('delivery_attempts', 'ix_delivery_attempts_webhook_id', 'ix_delivery_attempts_webhook', ['webhook_id', 'id']),
    ('deliveries', 'ix_deliveries_webhook_id', 'ix_deliveries_webhook_status', ['webhook_id', 'status']),
]


def upgrade():
    for table, old, new, columns in _INDEXES:
        op.create_index(new, table, columns, unique=False)
        if old is not None:
            op.drop_index(old, table_name=table)


def downgrade():
    for table, old, new, columns in reversed(_INDEXES):
        if old is not None:
            op.create_index(old, table, [columns[0]], unique=False)
        op.drop_index(new, table_name=table)

"""Baselines keep only value, margin and note: a metric's scale and direction come from the metric catalog.

Revision ID: 0002_baselines_catalog
Revises: 0001_initial
"""

from alembic import op

revision = "0002_baselines_catalog"
down_revision = "0001_initial"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE eval.baselines DROP COLUMN IF EXISTS scale, DROP COLUMN IF EXISTS direction")


def downgrade() -> None:
    op.execute(
        "ALTER TABLE eval.baselines ADD COLUMN IF NOT EXISTS scale text NOT NULL DEFAULT '0–1', "
        "ADD COLUMN IF NOT EXISTS direction text NOT NULL DEFAULT 'higher' CHECK (direction IN ('higher', 'lower'))"
    )

"""Bot profiles: named settings of a bot's HTTP API for Tier 3 (no secrets: only variable names).

Revision ID: 0014_bot_profiles
Revises: 0001_initial
"""

from alembic import op

revision = "0014_bot_profiles"
down_revision = "0001_initial"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE eval.bot_profiles (
            name text PRIMARY KEY CHECK (length(btrim(name)) > 0),
            spec jsonb NOT NULL,
            note text,
            created_at timestamptz NOT NULL DEFAULT now(),
            updated_at timestamptz NOT NULL DEFAULT now()
        );
        """
    )


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS eval.bot_profiles")

"""Topic names a person gave (renames and merges), kept for later runs and matched by topic centroid.

Revision ID: 0003_topic_names
Revises: 0002_baselines_catalog
"""

from alembic import op

revision = "0003_topic_names"
down_revision = "0002_baselines_catalog"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        -- one row per remembered topic centroid; rows sharing group_key are one (merged) topic
        CREATE TABLE eval.topic_names (
            id serial PRIMARY KEY,
            model text NOT NULL,
            dim integer NOT NULL,
            centroid vector NOT NULL,
            name text NOT NULL CHECK (length(btrim(name)) > 0),
            group_key text NOT NULL,
            source text,
            created_at timestamptz NOT NULL DEFAULT now(),
            updated_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE INDEX topic_names_model ON eval.topic_names (model, dim);
        """
    )


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS eval.topic_names")

"""Stored results of a run that are too large or too rich for its items: tables, vectors, figures' data.

``eval.run_artifacts``: one binary artefact per (run, name) — e.g. a real-users analysis's tables, topics and
vectors (``real_users_result``), so that reopening the analysis after an app restart reads it from the store
instead of recomputing it (issue 29). ``format`` names how ``data`` is encoded, ``code_version`` the code that
wrote it; deleting the run deletes its artefacts.

Revision ID: 0040_run_artifacts
Revises: 0022_baselines_corpus_bleu
"""

from alembic import op

revision = "0040_run_artifacts"
down_revision = "0022_baselines_corpus_bleu"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE eval.run_artifacts (
            run_id integer NOT NULL REFERENCES eval.runs(id) ON DELETE CASCADE,
            name text NOT NULL CHECK (length(btrim(name)) > 0),
            format text NOT NULL,
            code_version text,
            n_bytes bigint NOT NULL,
            data bytea NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (run_id, name)
        )
        """
    )


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS eval.run_artifacts")

"""Team deployment: who made each change. ``eval.audit_log`` and ``eval.runs.actor``.

``eval.audit_log`` has one row per recorded action (a run started, an item labelled, a dataset edited, a
setting changed, an action refused): when, who (the signed-in user's e-mail, or the OS user in single-user
mode), the action kind, its target and a few details (never a secret, never a question text).
``eval.runs.actor`` is who started the run (``created_by`` stays the OS user of the process that ran it).

Revision ID: 0034_team_audit
Revises: 0022_baselines_corpus_bleu
"""

from alembic import op

revision = "0034_team_audit"
down_revision = "0022_baselines_corpus_bleu"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE IF NOT EXISTS eval.audit_log (
            id bigserial PRIMARY KEY,
            at timestamptz NOT NULL DEFAULT now(),
            actor text NOT NULL CHECK (length(btrim(actor)) > 0),
            role text,
            action text NOT NULL,
            target text,
            outcome text NOT NULL DEFAULT 'done' CHECK (outcome IN ('done', 'refused')),
            details jsonb NOT NULL DEFAULT '{}'::jsonb
        );
        CREATE INDEX IF NOT EXISTS audit_log_at ON eval.audit_log (at DESC);
        CREATE INDEX IF NOT EXISTS audit_log_actor ON eval.audit_log (actor, at DESC);
        ALTER TABLE eval.runs ADD COLUMN IF NOT EXISTS actor text;
        """
    )


def downgrade() -> None:
    op.execute("ALTER TABLE eval.runs DROP COLUMN IF EXISTS actor; DROP TABLE IF EXISTS eval.audit_log;")

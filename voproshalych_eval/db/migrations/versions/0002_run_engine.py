"""Run engine: frozen configuration, knowledge-base snapshot, mixed flag, executing process, new outcome.

- ``config``: the full configuration a run started with (models, prompts, providers, dataset, snapshot,
  parameters); a resume compares the current configuration with it.
- ``snapshot_id``: the knowledge-base snapshot the run read (filled by the snapshot layer).
- ``mixed`` / ``mixed_reason``: a resume forced across a configuration change (results mix settings).
- ``pid`` / ``host``: the process executing the run (for "already running (pid …)").
- status ``done_with_failures``: finished, but more items failed than the allowed share.

Revision ID: 0002_run_engine
Revises: 0001_initial
"""

from alembic import op

revision = "0002_run_engine"
down_revision = "0001_initial"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        ALTER TABLE eval.runs
            ADD COLUMN config jsonb NOT NULL DEFAULT '{}'::jsonb,
            ADD COLUMN snapshot_id integer,
            ADD COLUMN mixed boolean NOT NULL DEFAULT false,
            ADD COLUMN mixed_reason text,
            ADD COLUMN pid integer,
            ADD COLUMN host text;
        ALTER TABLE eval.runs DROP CONSTRAINT IF EXISTS runs_status_check;
        ALTER TABLE eval.runs ADD CONSTRAINT runs_status_check
            CHECK (status IN ('running', 'done', 'done_with_failures', 'failed', 'cancelled'));
        """
    )


def downgrade() -> None:
    op.execute(
        """
        UPDATE eval.runs SET status = 'done' WHERE status = 'done_with_failures';
        ALTER TABLE eval.runs DROP CONSTRAINT IF EXISTS runs_status_check;
        ALTER TABLE eval.runs ADD CONSTRAINT runs_status_check
            CHECK (status IN ('running', 'done', 'failed', 'cancelled'));
        ALTER TABLE eval.runs DROP COLUMN config, DROP COLUMN snapshot_id, DROP COLUMN mixed,
            DROP COLUMN mixed_reason, DROP COLUMN pid, DROP COLUMN host;
        """
    )

"""Sandboxes (knowledge-base snapshots derived by edits) and coverage gaps a team works on.

- ``eval.snapshots.source_kind`` may be ``sandbox``: a snapshot derived from another one by edits (add a
  page, replace a page's text, remove a page); ``eval.sandboxes`` keeps its parent, the edits and the
  splitter / embedder settings (one row per sandbox snapshot, deleted with it).
- ``eval.gaps``: a coverage gap (a topic of a real-users analysis, identified across runs by its centroid,
  or a hand-picked set of questions) with its status, note and owner; ``eval.gap_events`` the history of
  its status changes; ``eval.gap_numbers`` its numbers per analysis run; ``eval.gap_diagnoses`` and
  ``eval.gap_drafts`` (versioned) what was found and written for it.

Revision ID: 0036_gaps_sandboxes
Revises: 0022_baselines_corpus_bleu
"""

from alembic import op

revision = "0036_gaps_sandboxes"
down_revision = "0022_baselines_corpus_bleu"
branch_labels = None
depends_on = ("0002_snapshots",)


def upgrade() -> None:
    op.execute(
        """
        ALTER TABLE eval.snapshots DROP CONSTRAINT IF EXISTS snapshots_source_kind_check;
        ALTER TABLE eval.snapshots ADD CONSTRAINT snapshots_source_kind_check
            CHECK (source_kind IN ('demo', 'url', 'sandbox'));

        CREATE TABLE eval.sandboxes (
            snapshot_id integer PRIMARY KEY REFERENCES eval.snapshots(id) ON DELETE CASCADE,
            parent_id integer REFERENCES eval.snapshots(id) ON DELETE SET NULL,
            edits jsonb NOT NULL,
            chunk_size integer NOT NULL,
            chunk_overlap integer NOT NULL,
            embedder text,
            created_at timestamptz NOT NULL DEFAULT now()
        );

        CREATE TABLE eval.gaps (
            id serial PRIMARY KEY,
            kind text NOT NULL CHECK (kind IN ('topic', 'questions')),
            name text NOT NULL,
            model text,
            centroid vector,
            log_ids integer[],
            status text NOT NULL DEFAULT 'open'
                CHECK (status IN ('open', 'in_progress', 'addressed', 'dismissed')),
            note text,
            owner text,
            status_changed_at timestamptz NOT NULL DEFAULT now(),
            created_at timestamptz NOT NULL DEFAULT now()
        );

        CREATE TABLE eval.gap_events (
            id serial PRIMARY KEY,
            gap_id integer NOT NULL REFERENCES eval.gaps(id) ON DELETE CASCADE,
            status text NOT NULL,
            note text,
            owner text,
            at timestamptz NOT NULL DEFAULT now()
        );

        CREATE TABLE eval.gap_numbers (
            gap_id integer NOT NULL REFERENCES eval.gaps(id) ON DELETE CASCADE,
            run_id integer NOT NULL,
            snapshot_id integer,
            topic integer,
            name text,
            similarity double precision,
            numbers jsonb NOT NULL,
            log_ids integer[] NOT NULL,
            effective integer[] NOT NULL,
            run_at timestamptz,
            PRIMARY KEY (gap_id, run_id)
        );

        CREATE TABLE eval.gap_diagnoses (
            id serial PRIMARY KEY,
            gap_id integer NOT NULL REFERENCES eval.gaps(id) ON DELETE CASCADE,
            method text NOT NULL,
            result jsonb NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now()
        );

        CREATE TABLE eval.gap_drafts (
            gap_id integer NOT NULL REFERENCES eval.gaps(id) ON DELETE CASCADE,
            version integer NOT NULL,
            source text NOT NULL,
            model text,
            body text NOT NULL,
            checks jsonb,
            created_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (gap_id, version)
        );
        """
    )


def downgrade() -> None:
    op.execute(
        """
        DROP TABLE IF EXISTS eval.gap_drafts, eval.gap_diagnoses, eval.gap_numbers, eval.gap_events, eval.gaps,
            eval.sandboxes;
        DELETE FROM eval.snapshots WHERE source_kind = 'sandbox';
        ALTER TABLE eval.snapshots DROP CONSTRAINT IF EXISTS snapshots_source_kind_check;
        ALTER TABLE eval.snapshots ADD CONSTRAINT snapshots_source_kind_check CHECK (source_kind IN ('demo', 'url'));
        """
    )

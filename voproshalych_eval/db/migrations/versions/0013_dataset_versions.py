"""Dataset versions (history with parent, action, note, knowledge-base references) and review state.

``eval.datasets`` rows stay immutable and content-addressed (kind, name, content hash); a *version* is
a numbered entry of a dataset name pointing at one of those rows. ``eval.dataset_reviews`` keeps the
review state of items per dataset name: accept/reject decisions with reasons, notes, the annotation
columns of the earlier benchmark, and the item itself for rejected items and unlabelled candidates
(which are not part of the evaluated records).

Revision ID: 0013_dataset_versions
Revises: 0001_initial
"""

from alembic import op

revision = "0013_dataset_versions"
down_revision = "0001_initial"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE eval.dataset_versions (
            id serial PRIMARY KEY,
            kind text NOT NULL,
            name text NOT NULL,
            version integer NOT NULL,
            dataset_id integer NOT NULL REFERENCES eval.datasets(id) ON DELETE CASCADE,
            parent_id integer REFERENCES eval.datasets(id) ON DELETE SET NULL,
            action text NOT NULL,
            note text,
            changes jsonb NOT NULL DEFAULT '{}'::jsonb,
            -- {chunk_id: [sha256 of the chunk text, url]} of every chunk the version references, read from
            -- the current knowledge-base snapshot when the version was made (what "stale" is measured against)
            kb_refs jsonb NOT NULL DEFAULT '{}'::jsonb,
            kb_snapshot_id integer,
            created_by text,
            created_at timestamptz NOT NULL DEFAULT now(),
            UNIQUE (kind, name, version)
        );
        CREATE INDEX dataset_versions_dataset_idx ON eval.dataset_versions(dataset_id);

        CREATE TABLE eval.dataset_reviews (
            kind text NOT NULL,
            name text NOT NULL,
            item_key text NOT NULL,
            status text NOT NULL DEFAULT 'pending',
            reason text,
            notes text,
            is_question_ok boolean,
            is_answer_ok boolean,
            is_chunk_ok boolean,
            item jsonb,
            item_index integer,
            suggestions jsonb,
            updated_by text,
            updated_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (kind, name, item_key),
            CHECK (status IN ('pending', 'accepted', 'rejected'))
        );

        INSERT INTO eval.dataset_versions(kind, name, version, dataset_id, action, note)
        SELECT kind, name, row_number() OVER (PARTITION BY kind, name ORDER BY id), id, 'import',
               'stored before dataset versioning'
        FROM eval.datasets;
        """
    )


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS eval.dataset_reviews, eval.dataset_versions CASCADE")

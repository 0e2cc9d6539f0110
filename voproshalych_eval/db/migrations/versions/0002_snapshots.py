"""Snapshots of the source's knowledge base and question log, taken into the store.

- ``eval.snapshots``: one row per distinct content (``content_hash`` unique), with counts, the
  source's schema variant and vector dimensions, and the model that filled the stored vectors.
- ``eval.snapshot_chunks`` / ``eval.snapshot_log``: the copied rows, LIST-partitioned by
  ``snapshot_id`` (one partition per snapshot, created when it is taken): searches of one snapshot
  scan only its partition, and deleting a snapshot drops its partitions.
- ``eval.chunk_vectors`` is keyed by (model, text hash) instead of (model, chunk id): a passage's
  vector depends on its text only, so every snapshot shares the vectors of unchanged texts.
- the HNSW copies ``eval.ann_*`` are dropped (derived data; they are now built per snapshot).

Revision ID: 0002_snapshots
Revises: 0001_initial
"""

from alembic import op

revision = "0002_snapshots"
down_revision = "0001_initial"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE eval.snapshots (
            id serial PRIMARY KEY,
            content_hash char(64) NOT NULL UNIQUE,
            chunks_hash char(64) NOT NULL,
            log_hash char(64) NOT NULL,
            source_kind text NOT NULL CHECK (source_kind IN ('demo', 'url')),
            source_label text NOT NULL,
            chunk_variant text,
            has_chunk boolean NOT NULL,
            has_question_answer boolean NOT NULL,
            has_user boolean NOT NULL,
            chunk_dim integer,
            question_dim integer,
            stored_model text,
            n_chunks integer NOT NULL,
            n_pages integer NOT NULL,
            n_questions integer NOT NULL,
            n_questions_with_embedding integer NOT NULL,
            n_users integer,
            seconds double precision,
            taken_at timestamptz NOT NULL DEFAULT now()
        );

        CREATE TABLE eval.snapshot_chunks (
            snapshot_id integer NOT NULL,
            id integer NOT NULL,
            url text,
            source_type text,
            text text NOT NULL,
            text_hash char(64) NOT NULL,
            embedding vector,
            created_at timestamptz,
            updated_at timestamptz,
            PRIMARY KEY (snapshot_id, id)
        ) PARTITION BY LIST (snapshot_id);

        CREATE TABLE eval.snapshot_log (
            snapshot_id integer NOT NULL,
            id integer NOT NULL,
            question text,
            answer text,
            url text,
            score integer,
            user_id integer,
            stop_point boolean,
            created_at timestamptz,
            updated_at timestamptz,
            embedding vector,
            PRIMARY KEY (snapshot_id, id)
        ) PARTITION BY LIST (snapshot_id);

        DELETE FROM eval.chunk_vectors a USING eval.chunk_vectors b
            WHERE a.model = b.model AND a.text_hash = b.text_hash AND a.chunk_id > b.chunk_id;
        ALTER TABLE eval.chunk_vectors DROP CONSTRAINT chunk_vectors_pkey;
        ALTER TABLE eval.chunk_vectors DROP COLUMN chunk_id;
        ALTER TABLE eval.chunk_vectors ADD PRIMARY KEY (model, text_hash);

        DO $$
        DECLARE r record;
        BEGIN
            FOR r IN SELECT tablename FROM pg_tables WHERE schemaname = 'eval' AND tablename LIKE 'ann\\_%' LOOP
                EXECUTE 'DROP TABLE eval.' || quote_ident(r.tablename);
            END LOOP;
        END $$;
        """
    )


def downgrade() -> None:
    op.execute(
        """
        DROP TABLE IF EXISTS eval.snapshot_log, eval.snapshot_chunks, eval.snapshots CASCADE;
        TRUNCATE eval.chunk_vectors;
        ALTER TABLE eval.chunk_vectors DROP CONSTRAINT chunk_vectors_pkey;
        ALTER TABLE eval.chunk_vectors ADD COLUMN chunk_id integer NOT NULL;
        ALTER TABLE eval.chunk_vectors ADD PRIMARY KEY (model, chunk_id);
        """
    )

"""Initial eval schema: meta, caches, datasets, runs, projections, baselines, imported question log.

Revision ID: 0001_initial
Revises:
"""

from alembic import op

revision = "0001_initial"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    op.execute(
        """
        CREATE TABLE eval.meta (
            key text PRIMARY KEY,
            value jsonb NOT NULL,
            updated_at timestamptz NOT NULL DEFAULT now()
        );

        -- one embedding per (model, kind, text): no text is embedded twice by the same model
        CREATE TABLE eval.embedding_cache (
            model text NOT NULL,
            text_hash char(64) NOT NULL,
            dim integer NOT NULL,
            embedding vector NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (model, text_hash)
        );

        -- the knowledge base re-embedded by a model other than the one that filled chunk.embedding
        CREATE TABLE eval.chunk_vectors (
            model text NOT NULL,
            chunk_id integer NOT NULL,
            text_hash char(64) NOT NULL,
            dim integer NOT NULL,
            embedding vector NOT NULL,
            PRIMARY KEY (model, chunk_id)
        );

        CREATE TABLE eval.llm_cache (
            key char(64) PRIMARY KEY,
            model text NOT NULL,
            request jsonb NOT NULL,
            response jsonb NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now()
        );

        CREATE TABLE eval.llm_calls (
            id bigserial PRIMARY KEY,
            run_id integer,
            provider text,
            model text NOT NULL,
            purpose text,
            status text NOT NULL,
            attempts integer NOT NULL DEFAULT 1,
            latency_ms double precision,
            prompt_tokens integer,
            completion_tokens integer,
            cached boolean NOT NULL DEFAULT false,
            error text,
            created_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE INDEX llm_calls_run_idx ON eval.llm_calls(run_id);

        CREATE TABLE eval.datasets (
            id serial PRIMARY KEY,
            name text NOT NULL,
            kind text NOT NULL,
            content_hash char(64) NOT NULL,
            n_items integer NOT NULL,
            source text,
            created_at timestamptz NOT NULL DEFAULT now(),
            UNIQUE (kind, name, content_hash)
        );

        CREATE TABLE eval.dataset_items (
            dataset_id integer NOT NULL REFERENCES eval.datasets(id) ON DELETE CASCADE,
            item_index integer NOT NULL,
            item_key text NOT NULL,
            payload jsonb NOT NULL,
            PRIMARY KEY (dataset_id, item_index),
            UNIQUE (dataset_id, item_key)
        );

        CREATE TABLE eval.runs (
            id serial PRIMARY KEY,
            tier text NOT NULL,
            label text,
            status text NOT NULL DEFAULT 'running',
            dataset_id integer REFERENCES eval.datasets(id) ON DELETE SET NULL,
            dataset_name text,
            dataset_hash char(64),
            params jsonb NOT NULL DEFAULT '{}'::jsonb,
            models jsonb NOT NULL DEFAULT '{}'::jsonb,
            prompts jsonb NOT NULL DEFAULT '{}'::jsonb,
            code_version text,
            created_by text,
            offline boolean NOT NULL DEFAULT false,
            n_items_total integer,
            metrics jsonb NOT NULL DEFAULT '{}'::jsonb,
            error text,
            started_at timestamptz NOT NULL DEFAULT now(),
            finished_at timestamptz,
            heartbeat_at timestamptz NOT NULL DEFAULT now(),
            CHECK (status IN ('running', 'done', 'failed', 'cancelled'))
        );
        CREATE INDEX runs_tier_idx ON eval.runs(tier, started_at DESC);

        CREATE TABLE eval.run_items (
            run_id integer NOT NULL REFERENCES eval.runs(id) ON DELETE CASCADE,
            item_key text NOT NULL,
            status text NOT NULL,
            result jsonb NOT NULL DEFAULT '{}'::jsonb,
            error text,
            created_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (run_id, item_key),
            CHECK (status IN ('done', 'failed'))
        );

        CREATE TABLE eval.projections (
            key char(64) PRIMARY KEY,
            params jsonb NOT NULL,
            n_points integer NOT NULL,
            coords bytea NOT NULL,
            point_ids jsonb NOT NULL,
            trustworthiness double precision,
            created_at timestamptz NOT NULL DEFAULT now()
        );

        CREATE TABLE eval.baselines (
            metric text NOT NULL,
            tier text NOT NULL,
            value double precision NOT NULL,
            scale text NOT NULL,
            direction text NOT NULL CHECK (direction IN ('higher', 'lower')),
            attention_margin double precision NOT NULL DEFAULT 0.05,
            note text,
            updated_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (tier, metric)
        );

        -- question logs imported from files (CSV / JSONL / JSON exports); production's own log is
        -- read in place from public.question_answer
        CREATE TABLE eval.question_log (
            source text NOT NULL,
            id integer NOT NULL,
            question text NOT NULL,
            answer text,
            url text,
            score integer,
            user_id integer,
            stop_point boolean NOT NULL DEFAULT false,
            created_at timestamptz,
            PRIMARY KEY (source, id)
        );
        """
    )


def downgrade() -> None:
    op.execute(
        "DROP TABLE IF EXISTS eval.question_log, eval.baselines, eval.projections, eval.run_items, "
        "eval.runs, eval.dataset_items, eval.datasets, eval.llm_calls, eval.llm_cache, "
        "eval.chunk_vectors, eval.embedding_cache, eval.meta CASCADE"
    )

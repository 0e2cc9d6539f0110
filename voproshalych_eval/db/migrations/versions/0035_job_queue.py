"""The job queue (procrastinate 3.10.0) in the store, the schedules of recurring runs, and alerts.

Runs are executed as jobs of procrastinate (a PostgreSQL task queue): its tables, types, functions and
triggers live in the store's ``public`` schema, next to ``eval``. The schema is **frozen here**: the SQL is
the copy of ``procrastinate/sql/schema.sql`` of version 3.10.0 kept beside this file
(``0035_procrastinate_3_10_0.sql``), not read from the installed package and not applied through
procrastinate's ``SchemaManager`` — a migration does what it did when it was written, whatever version of
the package is installed later. Upgrading procrastinate therefore means a new revision that copies the
package's ``sql/migrations/*.sql`` between the two versions (and a pin in ``pyproject.toml``).

``eval.schedules``: one row per named schedule (a cron line, its timezone, the run command it starts,
paused or not, when it last started a run and which). The queue's periodic tick reads it, so schedules
can be added or edited while the workers run.

``eval.alert_channels`` (webhook / Telegram / SMTP, the events each wants), ``eval.alert_state`` (the last
state of each watched series — a tier on a dataset, a gate, a schedule — so an alert goes out once per
change) and ``eval.alert_log`` (every alert sent, or failed to send).

Revision ID: 0035_job_queue
Revises: 0022_baselines_corpus_bleu
"""

from pathlib import Path

from alembic import op

revision = "0035_job_queue"
down_revision = "0022_baselines_corpus_bleu"
branch_labels = None
depends_on = None

SCHEMA_SQL = Path(__file__).with_name("0035_procrastinate_3_10_0.sql")


def upgrade() -> None:
    conn = op.get_bind()
    exists = conn.exec_driver_sql("SELECT to_regclass('public.procrastinate_jobs') IS NOT NULL").scalar()
    if not exists:
        raw = conn.connection.driver_connection  # psycopg: several statements run only without parameters
        raw.execute("SET LOCAL search_path TO public")
        raw.execute(SCHEMA_SQL.read_text(encoding="utf-8"))
        raw.execute("SET LOCAL search_path TO DEFAULT")
    op.execute(
        """
        CREATE TABLE IF NOT EXISTS eval.schedules (
            name text PRIMARY KEY,
            cron text NOT NULL,
            timezone text NOT NULL,
            command jsonb NOT NULL,
            paused boolean NOT NULL DEFAULT false,
            created_at timestamptz NOT NULL DEFAULT now(),
            updated_at timestamptz NOT NULL DEFAULT now(),
            last_due_at timestamptz,
            last_run_id integer,
            last_started_at timestamptz,
            last_note text
        );
        ALTER TABLE eval.runs ADD COLUMN IF NOT EXISTS schedule text;
        CREATE TABLE IF NOT EXISTS eval.alert_channels (
            name text PRIMARY KEY,
            kind text NOT NULL CHECK (kind IN ('webhook', 'telegram', 'smtp')),
            target text NOT NULL,
            options jsonb NOT NULL DEFAULT '{}'::jsonb,
            events text[] NOT NULL DEFAULT ARRAY['verdict', 'gate', 'schedule'],
            enabled boolean NOT NULL DEFAULT true,
            created_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE TABLE IF NOT EXISTS eval.alert_state (
            key text PRIMARY KEY,
            state text NOT NULL,
            run_id integer,
            updated_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE TABLE IF NOT EXISTS eval.alert_log (
            id bigserial PRIMARY KEY,
            sent_at timestamptz NOT NULL DEFAULT now(),
            channel text NOT NULL,
            event text NOT NULL,
            key text NOT NULL,
            run_id integer,
            ok boolean NOT NULL,
            error text,
            message text NOT NULL
        );
        """
    )


def downgrade() -> None:
    op.execute("ALTER TABLE eval.runs DROP COLUMN IF EXISTS schedule; DROP TABLE IF EXISTS eval.schedules, "
               "eval.alert_channels, eval.alert_state, eval.alert_log;")
    op.execute(
        """
        DROP TABLE IF EXISTS public.procrastinate_events, public.procrastinate_periodic_defers,
            public.procrastinate_jobs, public.procrastinate_workers CASCADE;
        DO $$
        DECLARE f record;
        BEGIN
            FOR f IN SELECT p.oid::regprocedure AS sig FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                     WHERE n.nspname = 'public' AND p.proname LIKE 'procrastinate%' LOOP
                EXECUTE 'DROP FUNCTION ' || f.sig || ' CASCADE';
            END LOOP;
        END $$;
        DROP TYPE IF EXISTS public.procrastinate_job_to_defer_v1, public.procrastinate_job_event_type,
            public.procrastinate_job_status CASCADE;
        """
    )

"""Human labels of judged items, and the aligned versions of judge metrics (issue 27).

``eval.human_labels``: one person's judgement of one item on one judge metric (or the pipeline's
``show_no_show``): the item as judged (question, answer, contexts, reference), the value on the metric's own
scale, who, when and why, where it came from (a label file, the demo's judge set, a dataset review, the app),
the run item it was made on (if any) and the item's topic. ``item_key`` is a hash of the judged content, so
the same item labelled by two people (or twice by one) is recognised; one row per (metric, item, annotator).

``eval.judge_versions``: an aligned version of a judge metric (instructions refined from disagreements,
few-shot examples from labelled items, a calibrated threshold) with its lineage (labels used, folds,
optimizer, model, before/after agreement) and whether it was adopted as the metric's default.

``eval.judge_agreements``: each measured agreement of a judge metric × models × version with its labels (the
headline statistic, CI, n, whether it is poor, the whole report); run reports warn next to a metric whose
judge's latest measurement is poor.

Revision ID: 0037_human_labels
Revises: 0022_baselines_corpus_bleu
"""

from alembic import op

revision = "0037_human_labels"
down_revision = "0022_baselines_corpus_bleu"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE eval.human_labels (
            id bigserial PRIMARY KEY,
            metric text NOT NULL CHECK (length(btrim(metric)) > 0),
            item_key text NOT NULL,
            item_id text,
            question text NOT NULL,
            answer text,
            contexts jsonb NOT NULL DEFAULT '[]'::jsonb,
            reference text,
            value double precision NOT NULL,
            annotator text NOT NULL CHECK (length(btrim(annotator)) > 0),
            note text,
            source text,
            run_id bigint,
            run_item_key text,
            topic text,
            created_at timestamptz NOT NULL DEFAULT now(),
            updated_at timestamptz NOT NULL DEFAULT now(),
            UNIQUE (metric, item_key, annotator)
        );
        CREATE INDEX human_labels_metric_idx ON eval.human_labels(metric);

        CREATE TABLE eval.judge_versions (
            id bigserial PRIMARY KEY,
            metric text NOT NULL,
            version text NOT NULL UNIQUE,
            spec jsonb NOT NULL,
            lineage jsonb NOT NULL,
            adopted boolean NOT NULL DEFAULT false,
            created_by text,
            created_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE INDEX judge_versions_metric_idx ON eval.judge_versions(metric);

        CREATE TABLE eval.judge_agreements (
            id bigserial PRIMARY KEY,
            metric text NOT NULL,
            models jsonb NOT NULL,
            version text NOT NULL,
            statistic text NOT NULL,
            value double precision,
            ci jsonb,
            n integer NOT NULL,
            poor boolean,
            report jsonb NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE INDEX judge_agreements_metric_idx ON eval.judge_agreements(metric);
        """
    )


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS eval.judge_agreements; DROP TABLE IF EXISTS eval.judge_versions; DROP TABLE IF EXISTS eval.human_labels;")

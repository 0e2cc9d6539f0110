"""Answer labels: the class a person gave each of the bot's frequent answer texts (real answer or a decline).

Keyed by the normalised text (lowercase, ё → е, whitespace collapsed), so a label holds for every log the
bot's fixed texts appear in; who labelled it and when are kept.

Revision ID: 0030_answer_labels
Revises: 0022_baselines_corpus_bleu
"""

from alembic import op

revision = "0030_answer_labels"
down_revision = "0022_baselines_corpus_bleu"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE eval.answer_labels (
            text_norm text PRIMARY KEY CHECK (length(text_norm) > 0),
            answer text NOT NULL,
            class text NOT NULL CHECK (class IN ('answer', 'not_found', 'refusal', 'template', 'error',
                                                 'clarification')),
            labelled_by text NOT NULL CHECK (length(btrim(labelled_by)) > 0),
            labelled_at timestamptz NOT NULL DEFAULT now(),
            source text
        );
        """
    )


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS eval.answer_labels")

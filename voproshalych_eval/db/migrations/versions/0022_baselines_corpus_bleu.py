"""Baselines of upgraded stores: the BLEU baseline moves to corpus BLEU; defaults added since are seeded.

``avg_bleu`` is now the mean of sentence BLEU, while the seed's reading bands (and its default baseline
20 ± 5) belong to corpus BLEU (``corpus_bleu``). Defaults are seeded only once, so a store seeded before
the change kept ``tier2/avg_bleu = 20`` and never got ``corpus_bleu``. This migration moves an UNEDITED
old default row (value 20, margin 5) to ``corpus_bleu``; an edited one is the user's and stays. In a
store already seeded, ``corpus_bleu`` is then added if still missing (a store not yet seeded gets every
default at its first seeding). The values are written here, not read from the catalog: a migration
does what it did when it was written.

Revision ID: 0022_baselines_corpus_bleu
Revises: 0002_baselines_catalog
"""

from alembic import op

revision = "0022_baselines_corpus_bleu"
down_revision = "0002_baselines_catalog"
branch_labels = None
depends_on = None

_NOTE = "sacrebleu corpus BLEU; the seed''s reading bands"  # an SQL literal (quote doubled)


def upgrade() -> None:
    op.execute(
        f"""
        UPDATE eval.baselines SET metric = 'corpus_bleu', note = '{_NOTE}', updated_at = now()
        WHERE tier = 'tier2' AND metric = 'avg_bleu' AND value = 20 AND attention_margin = 5
          AND NOT EXISTS (SELECT 1 FROM eval.baselines WHERE tier = 'tier2' AND metric = 'corpus_bleu');
        INSERT INTO eval.baselines (tier, metric, value, attention_margin, note)
        SELECT 'tier2', 'corpus_bleu', 20, 5, '{_NOTE}'
        WHERE EXISTS (SELECT 1 FROM eval.meta WHERE key = 'baselines_seeded' AND value = 'true'::jsonb)
        ON CONFLICT (tier, metric) DO NOTHING;
        """
    )


def downgrade() -> None:
    op.execute(
        """
        UPDATE eval.baselines SET metric = 'avg_bleu', note = 'sacrebleu', updated_at = now()
        WHERE tier = 'tier2' AND metric = 'corpus_bleu' AND value = 20 AND attention_margin = 5
          AND NOT EXISTS (SELECT 1 FROM eval.baselines WHERE tier = 'tier2' AND metric = 'avg_bleu');
        """
    )

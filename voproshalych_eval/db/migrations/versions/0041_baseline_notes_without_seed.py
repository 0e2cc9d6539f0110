"""Default baseline notes name the methodology, not "the seed" (a word no user knows).

The notes seeded from the metric catalog said "seed scale 1–5", "PASS verdicts of the seed-003 judge" and
"the seed's reading bands". An UNEDITED default note (exactly the old text) is rewritten to the catalog's new
wording; a note the user wrote stays. The texts are written here, not read from the catalog: a migration does
what it did when it was written.

Revision ID: 0041_baseline_notes_without_seed
Revises: 0022_baselines_corpus_bleu
"""

from alembic import op

revision = "0041_baseline_notes_without_seed"
down_revision = "0022_baselines_corpus_bleu"
branch_labels = None
depends_on = None

#: (old default note, new note) — SQL literals (a quote doubled)
_NOTES = (
    ("LLM judge, seed scale 1–5", "LLM judge, the methodology''s 1–5 scale"),
    ("PASS verdicts of the seed-003 judge", "PASS verdicts of the RAG + LLM answer-quality test''s judge"),
    ("sacrebleu corpus BLEU; the seed''s reading bands", "sacrebleu corpus BLEU; the methodology''s reading bands"),
)


def upgrade() -> None:
    for old, new in _NOTES:
        op.execute(f"UPDATE eval.baselines SET note = '{new}', updated_at = now() WHERE note = '{old}'")


def downgrade() -> None:
    for old, new in _NOTES:
        op.execute(f"UPDATE eval.baselines SET note = '{old}', updated_at = now() WHERE note = '{new}'")

"""A hand-picked gap keeps the normalised texts of its questions (``eval.gaps.questions``), so a later import of
the question log that asks the same question again (new log rows, new ids) counts it in the gap's numbers and in
the re-check of an addressed gap.

Revision ID: 0039_gap_questions
Revises: 0036_gaps_sandboxes
"""

from alembic import op

revision = "0039_gap_questions"
down_revision = "0036_gaps_sandboxes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE eval.gaps ADD COLUMN IF NOT EXISTS questions text[]")


def downgrade() -> None:
    op.execute("ALTER TABLE eval.gaps DROP COLUMN IF EXISTS questions")

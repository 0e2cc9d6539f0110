"""LLM price table (USD per 1M input/output tokens), seeded with the default list prices.

Revision ID: 0021_llm_prices
Revises: 0001_initial
"""

from alembic import op
from sqlalchemy import text

revision = "0021_llm_prices"
down_revision = "0001_initial"
branch_labels = None
depends_on = None


def upgrade() -> None:
    from voproshalych_eval.llm.prices import DEFAULT_PRICES

    op.execute(
        """
        CREATE TABLE IF NOT EXISTS eval.llm_prices (
            model text PRIMARY KEY,
            input_per_1m double precision NOT NULL CHECK (input_per_1m >= 0),
            output_per_1m double precision NOT NULL CHECK (output_per_1m >= 0),
            source text NOT NULL DEFAULT 'default',
            updated_at timestamptz NOT NULL DEFAULT now()
        )
        """
    )
    conn = op.get_bind()
    for model, (inp, out) in DEFAULT_PRICES.items():
        conn.execute(
            text("INSERT INTO eval.llm_prices(model, input_per_1m, output_per_1m) VALUES (:m, :i, :o) "
                 "ON CONFLICT (model) DO NOTHING"),
            {"m": model, "i": inp, "o": out},
        )


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS eval.llm_prices")

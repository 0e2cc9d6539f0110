"""LLM price table (USD per 1M input/output tokens), seeded with the default list prices of 2025-10.

The rows are copied here (a migration is frozen: later edits of ``llm.prices.DEFAULT_PRICES`` do not change
what this revision did, and ``db`` does not import ``llm``).

Revision ID: 0021_llm_prices
Revises: 0001_initial
"""

from alembic import op
from sqlalchemy import text

revision = "0021_llm_prices"
down_revision = "0001_initial"
branch_labels = None
depends_on = None

#: model -> (USD per 1M input tokens, USD per 1M output tokens), as ``llm.prices.DEFAULT_PRICES`` was in 2025-10
SEED_PRICES: dict[str, tuple[float, float]] = {
    "google/gemini-2.5-flash": (0.30, 2.50),
    "anthropic/claude-3.5-sonnet": (3.00, 15.00),
    "anthropic/claude-4.5-sonnet": (3.00, 15.00),
    "anthropic/claude-sonnet-4.5": (3.00, 15.00),
    "openai/gpt-4o-mini": (0.15, 0.60),
    "openai/gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "deepseek/deepseek-v3.2": (0.28, 0.42),
    "mistral-small-latest": (0.10, 0.30),
    "mistral-large-latest": (2.00, 6.00),
    "qwen2.5-1.5b": (0.0, 0.0),
}


def upgrade() -> None:
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
    for model, (inp, out) in SEED_PRICES.items():
        conn.execute(
            text("INSERT INTO eval.llm_prices(model, input_per_1m, output_per_1m) VALUES (:m, :i, :o) "
                 "ON CONFLICT (model) DO NOTHING"),
            {"m": model, "i": inp, "o": out},
        )


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS eval.llm_prices")

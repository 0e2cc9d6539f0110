"""What a paid LLM run is expected to cost before it starts: calls, tokens and USD.

A page shows :func:`estimate_run` under its Run button and starts a run that calls a priced model only after
the user confirms it (``ui.paid_run``). The token counts per call are an assumption (a typical prompt with a
chunk of context and a short reply), stated as such next to the number; the cost comes from the price table
(:mod:`voproshalych_eval.llm.prices`): a model without a price gives an unknown cost, never 0.

    >>> from voproshalych_eval.llm.prices import Price
    >>> e = estimate_run({"gpt-4o-mini": 100}, prices={"gpt-4o-mini": Price("gpt-4o-mini", 0.15, 0.60)})
    >>> (e.calls, e.prompt_tokens, e.completion_tokens, round(e.cost_usd, 4))
    (100, 120000, 30000, 0.036)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from voproshalych_eval.llm.prices import Price, lookup

__all__ = ["ASSUMED_COMPLETION_TOKENS", "ASSUMED_PROMPT_TOKENS", "RunEstimate", "estimate_run"]

#: tokens assumed per call when nothing better is known: a prompt with one chunk of context, a short reply
ASSUMED_PROMPT_TOKENS = 1200
ASSUMED_COMPLETION_TOKENS = 300


@dataclass(frozen=True)
class RunEstimate:
    """Expected calls, tokens and cost of a run (``cost_usd`` None when a model has no price)."""

    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    models: tuple[str, ...]
    unpriced: tuple[str, ...] = ()

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def estimate_run(calls_by_model: Mapping[str, int], *, prices: Mapping[str, Price],
                 prompt_tokens_per_call: int = ASSUMED_PROMPT_TOKENS,
                 completion_tokens_per_call: int = ASSUMED_COMPLETION_TOKENS) -> RunEstimate:
    """``calls`` = Σ calls per model; tokens = calls × tokens per call; cost = Σ price(model) of its tokens."""
    if any(int(n) < 0 for n in calls_by_model.values()):
        raise ValueError("estimate_run: a call count is negative")
    calls = sum(int(n) for n in calls_by_model.values())
    cost: float | None = 0.0
    unpriced = []
    for model, n in calls_by_model.items():
        price = lookup(model, prices)
        if price is None:
            unpriced.append(model)
            continue
        c = price.cost(int(n) * prompt_tokens_per_call, int(n) * completion_tokens_per_call)
        cost = None if c is None or cost is None else cost + c
    return RunEstimate(calls, calls * prompt_tokens_per_call, calls * completion_tokens_per_call,
                       None if unpriced else cost, tuple(calls_by_model), tuple(unpriced))

"""Sample, EvaluationResult and the multi-model aggregators.

Aggregators (over per-model scores; failed models — ``None`` — are excluded unless said otherwise):

* ``average`` — arithmetic mean; ``median`` — median (robust to one outlier model);
* ``majority_voting`` — 1.0 if more than half of the scores are >= 0.5 (a "true" vote), else 0.0;
* ``min`` (strictest) / ``max`` (most lenient);
* ``consensus`` — every model answered and all scores lie within ``tolerance`` (default 0.1; for binary
  verdicts that means identical) -> their mean; otherwise ``None`` with the failure ``no consensus``.
  A failed model breaks consensus (agreement of all models cannot be shown without it).

All scores are on 0–1; ``EvaluationResult.scale`` says how the model was asked (``"0–1"``, ``"1–5 -> 0–1"``...).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

AGGREGATORS = ("average", "median", "majority_voting", "min", "max", "consensus")
CONSENSUS_TOLERANCE = 0.1


@dataclass
class Sample:
    """The seed-004 sample: user input, the response to judge, an optional reference and contexts."""

    user_input: str
    response: str | None = None
    reference: str | None = None
    retrieved_contexts: list[str] = field(default_factory=list)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Sample:
        """From snake case (or the seed's camelCase) keys; unknown keys are ignored."""
        def get(*names: str) -> Any:
            for n in names:
                if n in d and d[n] is not None:
                    return d[n]
            return None

        ui = get("user_input", "userInput", "question")
        if not isinstance(ui, str) or not ui.strip():
            raise ValueError("user_input is required (a non-empty string)")
        ctx = get("retrieved_contexts", "retrievedContexts", "contexts") or []
        if isinstance(ctx, str):
            ctx = [ctx]
        if not isinstance(ctx, list) or not all(isinstance(c, str) for c in ctx):
            raise ValueError("retrieved_contexts must be a list of strings")
        resp = get("response", "answer")
        ref = get("reference", "ground_truth")
        for name, v in (("response", resp), ("reference", ref)):
            if v is not None and not isinstance(v, str):
                raise ValueError(f"{name} must be a string")
        return cls(ui, resp, ref, list(ctx))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class EvaluationResult:
    """The outcome of one metric on one sample. ``score`` is on 0–1 or ``None`` (then ``failures`` says why)."""

    metric: str
    score: float | None
    passed: bool | None = None
    threshold: float | None = None
    explanation: str = ""
    per_model: dict[str, float | None] = field(default_factory=dict)
    raw_replies: list[str] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    duration_s: float = 0.0
    tokens: dict[str, int] = field(default_factory=dict)
    scale: str = "0–1"
    offline: bool = False
    aggregate: str = "average"
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.score is None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if self.offline:
            d["label"] = "offline heuristic"
        return d


def aggregate_scores(values: Sequence[float | None], method: str = "average", *,
                     tolerance: float = CONSENSUS_TOLERANCE) -> tuple[float | None, str | None]:
    """Aggregate per-model (or per-run) scores. Returns ``(score, failure_reason)``; see the module doc."""
    method = method.lower()
    if method not in AGGREGATORS:
        raise ValueError(f"unknown aggregator '{method}'; use one of {', '.join(AGGREGATORS)}")
    valid = [float(v) for v in values if v is not None]
    if not valid:
        return None, "no valid score"
    if method == "average":
        return sum(valid) / len(valid), None
    if method == "median":
        return float(statistics.median(valid)), None
    if method == "majority_voting":
        return (1.0 if sum(v >= 0.5 for v in valid) > len(valid) / 2 else 0.0), None
    if method == "min":
        return min(valid), None
    if method == "max":
        return max(valid), None
    # consensus
    if len(valid) < len(values):
        return None, "no consensus: a model failed"
    if max(valid) - min(valid) > tolerance + 1e-12:
        return None, f"no consensus: scores differ by {max(valid) - min(valid):.3f} > {tolerance}"
    return sum(valid) / len(valid), None

"""Sample, EvaluationResult and the multi-model aggregators with their quorum.

Aggregators (over per-model scores, or over the ``strictness`` runs of one model; failed entries —
``None`` — never count as a score):

* ``average`` — arithmetic mean; ``median`` — the *lower* median (with an even number of answers the
  lower middle value, so the result is always a score some run or model gave);
* ``majority_voting`` — the top of the scale (1.0 on 0–1) if more than half of the answers are "true"
  (a score in the upper half of the scale), the bottom (0.0) if more than half are "false"; a tie is
  *undecided* (``None`` with the kind ``undecided``: counted apart, never a verdict);
* ``min`` (strictest) / ``max`` (most lenient);
* ``consensus`` — all scores within ``tolerance`` of the scale's width (default 0.1: 0.1 on 0–1,
  0.4 on 1–5; for binary verdicts: identical) -> their mean; otherwise ``None`` with ``no_consensus``.

``median_mean`` (a run aggregator, not offered across models) is the median as the methodology defines it for
SimpleCriteriaScore: with an even number of runs the mean of the two middle values.

**Verdicts of a jury** (:func:`vote`): under the aggregators that are a vote (``average``, ``median``,
``majority_voting``) the pass/fail verdict of several models is the majority of their own verdicts (score ≥
the threshold); a tie is *undecided* — ``passed`` is ``None`` and ``EvaluationResult.undecided`` is set, never
PASS by ``mean >= 0.5`` nor "No" by a lower median.

**Quorum** (:func:`required_answers`): a score is given only when enough of the asked votes/models
answered — by default *all* for ``min``, ``max`` and ``consensus`` (a missing model could be the
strictest, the most lenient or the dissenting one), a *strict majority* (more than half of those asked)
for ``average``, ``median`` and ``majority_voting``; ``quorum`` may be ``"all"``, ``"majority"``, ``"any"``
or a number. Short of the quorum the result is ``None`` with the failure ``no_quorum``. A score given by
a quorum short of every one asked is *partial* (``EvaluationResult.partial``, ``n_partial`` in aggregates).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

AGGREGATORS = ("average", "median", "majority_voting", "min", "max", "consensus")
CONSENSUS_TOLERANCE = 0.1
QUORUMS = ("all", "majority", "any")
#: the default quorum of each aggregator
DEFAULT_QUORUM = {"average": "majority", "median": "majority", "majority_voting": "majority",
                  "min": "all", "max": "all", "consensus": "all", "median_mean": "majority"}
#: run aggregators (a metric's ``run_aggregate``): the aggregators plus the methodology's median of SimpleCriteriaScore
RUN_AGGREGATORS = (*AGGREGATORS, "median_mean")
#: the aggregators that are a vote: their pass/fail verdict is the models' majority, a tie undecided
VOTE_AGGREGATORS = ("average", "median", "majority_voting")


def vote(values: Sequence[float | None], threshold: float) -> tuple[bool | None, bool]:
    """``(verdict, undecided)`` of the answered ``values``: the majority of ``value >= threshold``; a tie (as many
    pass as fail) is ``(None, True)``; no answer is ``(None, False)``."""
    votes = [float(v) >= threshold - 1e-12 for v in values if v is not None]
    yes, no = sum(votes), len(votes) - sum(votes)
    if not votes:
        return None, False
    if yes == no:
        return None, True
    return yes > no, False


def required_answers(method: str, n_asked: int, quorum: str | int | None = None) -> int:
    """How many of ``n_asked`` votes/models must answer for ``method`` to give a score."""
    rule = DEFAULT_QUORUM[method] if quorum is None else quorum
    if isinstance(rule, bool) or not isinstance(rule, int | str):
        raise ValueError(f"quorum must be one of {', '.join(QUORUMS)} or a number, got {rule!r}")
    if isinstance(rule, int):
        if rule < 1:
            raise ValueError(f"a numeric quorum must be >= 1, got {rule}")
        return min(rule, n_asked)
    if rule == "all":
        return n_asked
    if rule == "majority":
        return n_asked // 2 + 1
    if rule == "any":
        return min(1, n_asked)
    raise ValueError(f"quorum must be one of {', '.join(QUORUMS)} or a number, got {rule!r}")


@dataclass(frozen=True)
class Combined:
    """The outcome of an aggregator: ``score`` (or ``None`` and ``reason``/``kind``) and who answered."""

    score: float | None
    reason: str | None
    kind: str | None
    n_asked: int
    n_answered: int

    @property
    def partial(self) -> bool:
        return self.score is not None and self.n_answered < self.n_asked


def combine(values: Sequence[float | None], method: str = "average", *, quorum: str | int | None = None,
            tolerance: float = CONSENSUS_TOLERANCE, scale: tuple[float, float] = (0.0, 1.0)) -> Combined:
    """Aggregate per-model (or per-run) scores on ``scale`` with a quorum; see the module doc."""
    method = method.lower()
    if method not in RUN_AGGREGATORS:
        raise ValueError(f"unknown aggregator '{method}'; use one of {', '.join(AGGREGATORS)}")
    lo, hi = float(scale[0]), float(scale[1])
    valid = [float(v) for v in values if v is not None]
    n, k = len(values), len(valid)
    if not valid:
        return Combined(None, "no valid score", None, n, 0)
    need = required_answers(method, n, quorum)
    if k < need:
        return Combined(None, f"no quorum: {k} of {n} answered, {need} needed for {method}", "no_quorum", n, k)
    if method == "average":
        score = sum(valid) / k
    elif method == "median":
        score = float(statistics.median_low(valid))
    elif method == "median_mean":
        score = float(statistics.median(valid))
    elif method == "majority_voting":
        mid = lo + (hi - lo) / 2
        yes = sum(v >= mid for v in valid)
        if yes * 2 == k:
            return Combined(None, f"undecided: a tie, {yes} of {k} answers true", "undecided", n, k)
        score = hi if yes > k / 2 else lo
    elif method == "min":
        score = min(valid)
    elif method == "max":
        score = max(valid)
    else:  # consensus
        spread, allowed = max(valid) - min(valid), tolerance * (hi - lo)
        if spread > allowed + 1e-12:
            return Combined(None, f"no consensus: scores differ by {spread:.3f} > {allowed:g}", "no_consensus", n, k)
        score = sum(valid) / k
    return Combined(score, None, None, n, k)


def aggregate_scores(values: Sequence[float | None], method: str = "average", *, quorum: str | int | None = None,
                     tolerance: float = CONSENSUS_TOLERANCE,
                     scale: tuple[float, float] = (0.0, 1.0)) -> tuple[float | None, str | None]:
    """:func:`combine` as ``(score, failure_reason)``."""
    c = combine(values, method, quorum=quorum, tolerance=tolerance, scale=scale)
    return c.score, c.reason


@dataclass
class Sample:
    """The Ragas general-purpose metrics sample: user input, the response to judge, an optional reference and contexts."""

    user_input: str
    response: str | None = None
    reference: str | None = None
    retrieved_contexts: list[str] = field(default_factory=list)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, require_question: bool = True) -> Sample:
        """From snake case (or the methodology's camelCase) keys; unknown keys are ignored. ``require_question=False``
        accepts a sample without ``user_input`` (metrics that need none, e.g. Ragas Semantic Similarity)."""
        def get(*names: str) -> Any:
            for n in names:
                if n in d and d[n] is not None:
                    return d[n]
            return None

        ui = get("user_input", "userInput", "question")
        if ui is None and not require_question:
            ui = ""
        if not isinstance(ui, str) or (require_question and not ui.strip()):
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
    """The outcome of one metric on one sample.

    ``score`` is on the metric's own scale (``score_range``; ``scale`` names it: 0–1, the methodology's 1–5 for
    answer correctness, the integer level for RubricsScore, −1–1 for a cosine) or ``None`` — then
    ``failure_kind`` (:mod:`voproshalych_eval.metrics.failures`) and ``failures`` say why. ``score_norm`` is
    the same score on 0–1. ``n_asked`` / ``n_answered`` count the calls (models × runs) asked and answered;
    ``partial`` is a score given by a quorum short of all of them. ``empty_answer`` marks a response that
    was empty and scored the scale's lowest value by rule. ``undecided`` marks a tie between the judges'
    verdicts (``passed`` is then ``None``; counted apart, left out of pass rates and accuracies).
    """

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
    score_range: tuple[float, float] = (0.0, 1.0)
    n_asked: int = 0
    n_answered: int = 0
    partial: bool = False
    failure_kind: str | None = None
    empty_answer: bool = False
    undecided: bool = False

    @property
    def failed(self) -> bool:
        return self.score is None and self.failure_kind != "not_applicable"

    @property
    def score_norm(self) -> float | None:
        """``score`` on 0–1: ``(score − low) / (high − low)`` of ``score_range``."""
        if self.score is None:
            return None
        lo, hi = self.score_range
        return (self.score - lo) / (hi - lo) if hi > lo else None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["score_range"] = list(self.score_range)
        d["score_norm"] = self.score_norm
        if self.offline:
            d["label"] = "offline heuristic"
        return d

"""LLM-judged metrics (faithfulness, relevance, correctness, e2e, RAG judge, AspectCritic,
SimpleCriteriaScore, RubricsScore, ResponseRelevancy, SemanticSimilarity, show/no-show) with
multi-model aggregation and an offline fallback. See :mod:`voproshalych_eval.judges.judge`."""

from voproshalych_eval.judges.base import AGGREGATORS, EvaluationResult, Sample, aggregate_scores
from voproshalych_eval.judges.judge import METRIC_KEYS, METRICS, Judge, get_judge, parse_verdict

__all__ = [
    "AGGREGATORS",
    "METRICS",
    "METRIC_KEYS",
    "EvaluationResult",
    "Judge",
    "Sample",
    "aggregate_scores",
    "get_judge",
    "parse_verdict",
]

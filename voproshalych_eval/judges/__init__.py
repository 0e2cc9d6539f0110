"""LLM-judged metrics (faithfulness, relevance, correctness, e2e, RAG judge, AspectCritic,
SimpleCriteriaScore, RubricsScore, ResponseRelevancy, SemanticSimilarity, show/no-show) with
multi-model aggregation, quorums and an offline fallback. The metrics are one table
(:mod:`voproshalych_eval.judges.judge_metrics`); the Judge is :mod:`voproshalych_eval.judges.judge`."""

from voproshalych_eval.judges.base import (
    AGGREGATORS,
    Combined,
    EvaluationResult,
    Sample,
    aggregate_scores,
    combine,
    required_answers,
)
from voproshalych_eval.judges.judge import METRIC_KEYS, METRICS, Judge, get_judge
from voproshalych_eval.judges.judge_metrics import (
    JUDGE_METRICS,
    JudgeMetric,
    Option,
    metric_key,
    parse_verdict,
)

__all__ = [
    "AGGREGATORS",
    "JUDGE_METRICS",
    "METRICS",
    "METRIC_KEYS",
    "Combined",
    "EvaluationResult",
    "Judge",
    "JudgeMetric",
    "Option",
    "Sample",
    "aggregate_scores",
    "combine",
    "get_judge",
    "metric_key",
    "parse_verdict",
    "required_answers",
]

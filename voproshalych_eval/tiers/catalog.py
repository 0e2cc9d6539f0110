"""The tiers of the benchmark (seed 000, section 2.1), their names and key metrics."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TierInfo:
    key: str
    title: tuple[str, str]
    key_metrics: tuple[str, ...]
    page: str


TIERS: dict[str, TierInfo] = {
    t.key: t
    for t in (
        TierInfo("tier0", ("Tier 0 · Эмбеддинги", "Tier 0 · Embeddings"), ("effective_dimensionality", "avg_nn_distance"), "pages/tier0_embeddings.py"),
        TierInfo("tier1", ("Tier 1 · Поиск", "Tier 1 · Retrieval"), ("hit_rate@5", "mrr", "ndcg@10"), "pages/tier1_retrieval.py"),
        TierInfo("tier2", ("Tier 2 · Генерация", "Tier 2 · Generation"), ("avg_faithfulness", "avg_answer_relevance", "avg_rougeL_f"), "pages/tier2_generation.py"),
        TierInfo("tier3", ("Tier 3 · Сквозная", "Tier 3 · End to end"), ("avg_e2e_score", "pass_rate", "avg_semantic_similarity"), "pages/tier3_end_to_end.py"),
        TierInfo("judge", ("Судья · стабильность", "Judge · stability"), ("consistency_score", "error_rate"), "pages/judges.py"),
        TierInfo("judge_pipeline", ("Судья · показ/непоказ", "Judge · show/no-show"), ("f1_score", "accuracy"), "pages/judges.py"),
        TierInfo("ux", ("UX", "UX"), ("cache_hit_rate", "context_preservation"), "pages/ux.py"),
        TierInfo("real_users", ("Реальные пользователи", "Real users"), ("chunk_coverage", "n_topics"), "pages/real_users.py"),
    )
}

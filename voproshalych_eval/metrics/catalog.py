"""The metric catalog: the ONE place where a metric's scale, direction, labels and default baseline live.

Every key a tier stores in a run's aggregates has an entry here (a test collects the keys every tier's
``aggregate`` produces and fails on any that is missing). Baselines (:mod:`voproshalych_eval.engine.baselines`),
labels (``ui.i18n.metric_label``), the Overview, Runs and Baselines pages, reports, chart axes and the
CLI read it; nothing guesses a direction from a metric's name.

An entry (:class:`MetricSpec`) holds:

* ``key`` — the aggregate key (``avg_faithfulness``, ``hit_rate@5``);
* ``ru`` / ``en`` — labels;
* ``scale`` — a :class:`Scale`: bounds and unit (share 0–1, 1–5, 0–100, −1–1, seconds, count, …);
* ``direction`` — ``higher`` or ``lower`` is better, or ``none`` (a count, a setting, a description);
* ``kind`` — ``mean`` (mean of a per-item score), ``rate`` (share of items), ``count``, ``statistic``
  (a corpus-level or distribution statistic: corpus BLEU, a percentile, a kappa) or ``setting``;
* ``item_field`` — the per-item field the aggregate is the mean of (paired tests use it);
* ``how_ru`` / ``how_en`` — the formula line for "how to read";
* ``bands`` — the methodology's reading bands where the methodology gives them;
* ``baseline`` / ``margin`` / ``baseline_tiers`` — the default baseline, its attention margin (in the
  metric's own units) and the tiers it is seeded for.

Keys are resolved (:func:`get`) exactly first, then with leading block segments removed (``chunk.mrr``,
``per_model.gpt-4o.consistency_score``, ``by_question_type.factoid.avg_faithfulness`` → the bare key),
then as a family (``hit_rate@7``), then as a member of a group whose children are all alike
(``timings_s.embed``), and a ``benchmark_`` prefix (the calibration judge of the judge pipeline) maps to
the same metric.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

__all__ = [
    "CATALOG",
    "DIRECTIONS",
    "ITEM_FIELDS",
    "KINDS",
    "SCALES",
    "MetricSpec",
    "Scale",
    "default_baselines",
    "direction",
    "get",
    "is_catalogued",
    "label",
    "for_item_field",
    "scale_of",
    "scale_of_item_field",
    "spec",
    "uncatalogued",
]

DIRECTIONS = ("higher", "lower", "none")
KINDS = ("mean", "rate", "count", "statistic", "setting")


@dataclass(frozen=True)
class Scale:
    """The range of a metric's values and their unit. ``high`` may be ``math.inf`` (counts, seconds)."""

    key: str
    low: float
    high: float
    ru: str
    en: str

    def contains(self, value: float) -> bool:
        return self.low - 1e-9 <= float(value) <= self.high + 1e-9

    def label(self, lang: str = "ru") -> str:
        return self.en if lang == "en" else self.ru

    @property
    def bounded(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)


INF = math.inf
SHARE = Scale("0–1", 0.0, 1.0, "0–1", "0–1")
LIKERT = Scale("1–5", 1.0, 5.0, "1–5", "1–5")
PERCENT = Scale("0–100", 0.0, 100.0, "0–100", "0–100")
SIGNED = Scale("−1–1", -1.0, 1.0, "−1–1", "−1–1")
DIST2 = Scale("0–2", 0.0, 2.0, "0–2", "0–2")
DISTANCE = Scale("distance", 0.0, INF, "расстояние ≥ 0", "distance ≥ 0")
INV_DISTANCE = Scale("1/distance", 0.0, INF, "1 / расстояние", "1 / distance")
COUNT = Scale("count", 0.0, INF, "количество", "count")
SECONDS = Scale("seconds", 0.0, INF, "секунды", "seconds")
LEVEL = Scale("level", 0.0, INF, "уровень рубрики (целое)", "rubric level (integer)")
USD = Scale("usd", 0.0, INF, "доллары США", "US dollars")
RANK = Scale("rank", 1.0, INF, "ранг (1 — первый)", "rank (1 = first)")

#: every scale by key (chart facets, the Baselines page)
SCALES: dict[str, Scale] = {s.key: s for s in (SHARE, LIKERT, PERCENT, SIGNED, DIST2, DISTANCE, INV_DISTANCE,
                                               COUNT, SECONDS, LEVEL, USD, RANK)}

Band = tuple[float, float, str, str]  # low, high, ru, en


@dataclass(frozen=True)
class MetricSpec:
    key: str
    ru: str
    en: str
    scale: Scale
    direction: str
    kind: str
    how_ru: str
    how_en: str
    item_field: str | None = None
    bands: tuple[Band, ...] = ()
    baseline: float | None = None
    margin: float = 0.0
    baseline_tiers: tuple[str, ...] = ()
    note: str = ""

    def label(self, lang: str = "ru") -> str:
        return self.en if lang == "en" else self.ru

    def how(self, lang: str = "ru") -> str:
        return self.how_en if lang == "en" else self.how_ru

    def band(self, value: float | None, lang: str = "ru") -> str | None:
        """The methodology's reading of ``value`` (``None`` without bands or a value)."""
        if value is None or not self.bands:
            return None
        for lo, hi, ru, en in self.bands:
            if lo <= value <= hi:
                return en if lang == "en" else ru
        return None


def _m(key: str, ru: str, en: str, scale: Scale, direction: str, kind: str, how_ru: str, how_en: str,
       **kw: object) -> MetricSpec:
    return MetricSpec(key, ru, en, scale, direction, kind, how_ru, how_en, **kw)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------- reading bands

NDCG_BANDS: tuple[Band, ...] = (
    (0.9, 1.0, "отлично", "excellent"), (0.5, 0.9, "приемлемо", "acceptable"),
    (0.0, 0.5, "требуется улучшение", "needs improvement"),
)
BLEU_BANDS: tuple[Band, ...] = (
    (50.0, 100.0, "очень хорошо (> 50)", "very good (> 50)"),
    (40.0, 50.0, "хорошо (между полосами методики 20–40 и > 50)", "good (between the methodology's 20–40 and > 50 bands)"),
    (20.0, 40.0, "приемлемо (20–40)", "acceptable (20–40)"),
    (0.0, 20.0, "требуется существенное улучшение (< 20)", "needs substantial improvement (< 20)"),
)
SIMILARITY_BANDS: tuple[Band, ...] = (
    (0.9, 1.0, "почти идентичный смысл", "nearly identical meaning"),
    (0.7, 0.9, "схожий смысл", "similar meaning"),
    (0.5, 0.7, "частично связаны", "partly related"),
    (-1.0, 0.5, "разный смысл", "different meaning"),
)
RELEVANCY_BANDS: tuple[Band, ...] = (
    (0.9, 1.0, "ответ напрямую отвечает на вопрос", "answers the question directly"),
    (0.7, 0.9, "в основном соответствует вопросу", "mostly matches the question"),
    (0.5, 0.7, "частично затрагивает вопрос", "partly addresses the question"),
    (0.0, 0.5, "не соответствует вопросу", "does not match the question"),
)
FAITHFULNESS_BANDS: tuple[Band, ...] = (
    (0.8, 1.0, "высокое качество, минимум галлюцинаций", "high quality, minimal hallucination"),
    (0.5, 0.8, "заметные неподтверждённые утверждения", "noticeable unsupported claims"),
    (0.0, 0.5, "серьёзные проблемы с достоверностью", "serious faithfulness problems"),
)

# --------------------------------------------------------------------------------------- entries

_ENTRIES: list[MetricSpec] = []


def _add(*specs: MetricSpec) -> None:
    _ENTRIES.extend(specs)


def _count(key: str, ru: str, en: str, how_ru: str, how_en: str, direction: str = "none",
           kind: str = "count") -> MetricSpec:
    return _m(key, ru, en, COUNT, direction, kind, how_ru, how_en)


def _latency(prefix: str, ru: str, en: str) -> list[MetricSpec]:
    return [
        _m(f"{prefix}_p{q}", f"{ru}, p{q}", f"{en}, p{q}", SECONDS, "lower", "statistic",
           f"{q}-й перцентиль по всем вызовам, секунды", f"{q}th percentile over all calls, seconds")
        for q in (50, 95, 99)
    ]


# ---- shared counts
_add(
    _count("n", "Элементов", "Items", "число элементов в группе", "items in the group"),
    _count("n_items", "Элементов", "Items", "все элементы запуска", "all items of the run"),
    _count("n_failed_items", "Сбойных элементов", "Failed items",
           "элементы, не давшие результата (ошибка генерации, API, …)", "items that produced no result", "lower"),
    _count("n_partial", "Частичных оценок", "Partial scores",
           "элементы, оценённые кворумом, но не всеми спрошенными голосами/моделями",
           "items scored by a quorum but not by every vote/model asked", "lower"),
    _count("tokens", "Токенов", "Tokens", "сумма токенов запроса и ответа всех вызовов",
           "prompt + completion tokens of all calls"),
    _count("repeats", "Повторов", "Repeats", "сколько раз повторён каждый вызов", "times each call was repeated",
           kind="setting"),
    _count("k", "k (соседей)", "k (neighbours)", "параметр запуска", "run parameter", kind="setting"),
)

# ---- failure kinds (counts of items per kind; see metrics.failures)
for _kind, _ru, _en, _dir in (
    ("transport", "сбои транспорта", "transport failures", "lower"),
    ("parse", "ответы, которые не удалось разобрать", "unparseable replies", "lower"),
    ("no_quorum", "нет кворума", "no quorum", "lower"),
    ("no_consensus", "нет консенсуса моделей", "no model consensus", "lower"),
    ("error", "прочие ошибки", "other errors", "lower"),
    ("not_applicable", "неприменимо (нет нужного поля)", "not applicable (a required field is missing)", "none"),
    ("empty_answer", "пустые ответы (оценены как плохие)", "empty answers (scored as bad answers)", "lower"),
    ("context_overflow", "запрос длиннее окна контекста модели", "prompts longer than the model's context window",
     "lower"),
    ("bad_request", "запросы, отвергнутые сервером как неверные", "requests the server refused as malformed", "lower"),
    ("auth", "отказ в доступе (ключ API)", "credentials refused (API key)", "lower"),
    ("rate_limit", "лимит запросов провайдера (429) после повторов", "provider rate limits (429) after the retries",
     "lower"),
    ("server", "сбои сервера (HTTP 5xx)", "server failures (HTTP 5xx)", "lower"),
):
    _add(_m(f"failure_kinds.{_kind}", _ru.capitalize(), _en.capitalize(), COUNT, _dir, "count",
            f"число элементов: {_ru}", f"items with {_en}"))

# ---- Tier 0: geometry of the embedding space (distances are in the run's distance metric)
_D = ("в выбранной метрике расстояния (косинусное 0–2 или евклидово)",
      "in the run's distance metric (cosine 0–2 or Euclidean)")
_add(
    _count("total_samples", "Число векторов", "Vectors", "N — векторов в анализе", "N — vectors analysed"),
    # no better direction: near 0 means near-duplicate chunks, large means a sparse space (issue 22)
    _m("avg_nn_distance", "Ср. расстояние до соседей", "Mean NN distance", DISTANCE, "none", "statistic",
       f"среднее расстояние до k ближайших соседей {_D[0]}; около 0 — почти-дубликаты, большое — разреженное "
       "пространство; ни то, ни другое не «лучше»",
       f"mean distance to the k nearest neighbours {_D[1]}; near 0 means near-duplicates, large a sparse space; "
       "neither end is simply better"),
    _m("std_nn_distance", "СКО расстояния до соседей", "Std NN distance", DISTANCE, "none", "statistic",
       "разброс расстояний до соседей; выше — неоднородная плотность",
       "spread of the neighbour distances; higher means uneven density"),
    _m("density_score", "Плотность", "Density", INV_DISTANCE, "none", "statistic",
       "1 / (ср. расстояние до соседей + ε)", "1 / (mean NN distance + ε)"),
    _m("avg_spread", "Ср. разброс", "Mean spread", DISTANCE, "none", "statistic",
       "среднее евклидово расстояние до центроида", "mean Euclidean distance to the centroid"),
    _m("max_spread", "Макс. разброс", "Max spread", DISTANCE, "none", "statistic",
       "наибольшее расстояние до центроида (выбросы)", "largest distance to the centroid (outliers)"),
    _m("spread_std", "СКО разброса", "Spread std", DISTANCE, "none", "statistic",
       "СКО расстояний до центроида", "std of the distances to the centroid"),
    _m("effective_dimensionality", "Эффективная размерность", "Effective dimensionality", COUNT, "higher",
       "statistic", "число компонент, объясняющих 95% дисперсии; слишком мало — схлопывание пространства",
       "components explaining 95% of the variance; too few means a collapsed space",
       baseline=20.0, margin=5.0, baseline_tiers=("tier0",),
       note="a collapse to few directions means anisotropic embeddings"),
    _m("avg_pairwise_distance", "Ср. попарное расстояние", "Mean pairwise distance", DISTANCE, "none",
       "statistic", "2/(N(N−1)) Σ d(eᵢ, eⱼ)", "2/(N(N−1)) Σ d(eᵢ, eⱼ)"),
    _m("std_pairwise_distance", "СКО попарного расстояния", "Std pairwise distance", DISTANCE, "none",
       "statistic", "СКО попарных расстояний", "std of the pairwise distances"),
    _m("min_pairwise_distance", "Мин. попарное расстояние", "Min pairwise distance", DISTANCE, "none",
       "statistic", "наименьшее попарное расстояние (0 — дубликаты)", "smallest pairwise distance (0 = duplicates)"),
    _m("max_pairwise_distance", "Макс. попарное расстояние", "Max pairwise distance", DISTANCE, "none",
       "statistic", "наибольшее попарное расстояние", "largest pairwise distance"),
    _m("mean_pairwise_cosine_similarity", "Ср. косинусное сходство пар", "Mean pairwise cosine similarity",
       SIGNED, "lower", "statistic", "среднее косинусное сходство пар; высокое — анизотропия (все векторы в одном конусе)",
       "mean cosine of all pairs; high means anisotropy (all vectors in one cone)"),
    _m("top1_variance_share", "Доля дисперсии 1-й компоненты", "Top-1 variance share", SHARE, "none",
       "statistic", "λ₁ / Σλ", "λ₁ / Σλ"),
    _m("top10_variance_share", "Доля дисперсии 10 компонент", "Top-10 variance share", SHARE, "none",
       "statistic", "Σ₁¹⁰ λ / Σλ", "Σ₁¹⁰ λ / Σλ"),
    _count("near_duplicate_pairs", "Пар почти-дубликатов", "Near-duplicate pairs",
           "пар с косинусным сходством выше порога", "pairs with a cosine similarity above the threshold", "lower"),
)

# ---- Tier 1: retrieval (chunk and URL levels share these keys)
DEFAULT_KS = (1, 3, 5, 10)
DEFAULT_NDCG_KS = (5, 10)
_RETRIEVAL_BASELINES = {"hit_rate@5": 0.80, "ndcg@10": 0.65, "recall@10": 0.80}


def _retrieval(key: str, ru: str, en: str, how_ru: str, how_en: str, **kw: object) -> MetricSpec:
    b = _RETRIEVAL_BASELINES.get(key)
    extra: dict[str, object] = {"baseline": b, "margin": 0.05, "baseline_tiers": ("tier1",),
                                "note": "chunk level; URL level uses the same baseline"} if b is not None else {}
    return _m(key, ru, en, SHARE, "higher", "mean", how_ru, how_en, item_field=key, **extra, **kw)


def _retrieval_family(k: int | str) -> list[MetricSpec]:
    return [
        _retrieval(f"hit_rate@{k}", f"Hit Rate@{k}", f"Hit Rate@{k}",
                   f"доля вопросов, у которых релевантный документ есть в первых {k}",
                   f"share of questions with a relevant document in the first {k}"),
        _retrieval(f"recall@{k}", f"Recall@{k}", f"Recall@{k}",
                   f"|релевантные ∩ top-{k}| / |релевантные|", f"|relevant ∩ top-{k}| / |relevant|"),
        _retrieval(f"precision@{k}", f"Precision@{k}", f"Precision@{k}",
                   f"|релевантные ∩ top-{k}| / {k}", f"|relevant ∩ top-{k}| / {k}"),
        _retrieval(f"ndcg@{k}", f"NDCG@{k}", f"NDCG@{k}", f"DCG@{k} / IDCG@{k}, бинарная релевантность",
                   f"DCG@{k} / IDCG@{k}, binary relevance", bands=NDCG_BANDS),
    ]


for _k in DEFAULT_KS:
    _add(*_retrieval_family(_k))
_add(
    _retrieval("mrr", "MRR", "MRR", "среднее 1 / ранг первого релевантного (0, если не найден)",
               "mean of 1 / rank of the first relevant result (0 if none)",
               baseline=0.60, margin=0.05, baseline_tiers=("tier1",), note="chunk level; URL level uses the same baseline"),
    _retrieval("map", "MAP", "MAP", "средняя точность (trec_eval map)", "mean average precision (trec_eval map)"),
    _m("retrieval_consistency", "Стабильность выдачи", "Retrieval consistency", SHARE, "higher", "statistic",
       "средний попарный Jaccard top-k при повторных одинаковых запросах",
       "mean pairwise Jaccard of the top-k over repeated identical queries"),
    _count("n_unanswerable", "Вопросов без ответа", "Unanswerable questions",
           "вопросы без релевантных документов (исключены из средних)",
           "questions with no relevant document (excluded from the means)"),
    _count("n_with_hits", "С найденными документами", "With hits", "вопросы, для которых что-то найдено",
           "questions with at least one hit"),
    _count("questions", "Вопросов", "Questions", "вопросы в средних", "questions in the means"),
    _count("chunk", "Уровень чанков", "Chunk level", "вопросы в средних уровня чанков",
           "questions in the chunk-level means"),
    _count("url", "Уровень страниц", "Page level", "вопросы в средних уровня страниц",
           "questions in the page-level means"),
    _count("retrieved_depth", "Глубина выдачи", "Retrieval depth",
           "сколько чанков извлечено на вопрос", "chunks retrieved per question", kind="setting"),
)

# ---- Tier 2 / Tier 3: generation, text overlap, end to end
_add(
    _m("avg_faithfulness", "Фактичность", "Faithfulness", SHARE, "higher", "mean",
       "доля утверждений ответа, подтверждённых контекстом (LLM-судья)",
       "share of the answer's claims supported by the context (LLM judge)",
       item_field="faithfulness", bands=FAITHFULNESS_BANDS, baseline=0.80, margin=0.05,
       baseline_tiers=("tier2",), note="LLM judge"),
    _m("avg_answer_relevance", "Релевантность ответа", "Answer relevance", SHARE, "higher", "mean",
       "насколько прямо и полно ответ отвечает на вопрос (LLM-судья)",
       "how directly and fully the answer addresses the question (LLM judge)",
       item_field="answer_relevance", baseline=0.80, margin=0.05, baseline_tiers=("tier2",), note="LLM judge"),
    _m("avg_answer_correctness", "Корректность ответа", "Answer correctness", LIKERT, "higher", "mean",
       "оценка судьи 1–5 относительно эталона (шкала методики оценки)", "judge score 1–5 against the reference (the methodology's scale)",
       item_field="answer_correctness", baseline=4.0, margin=0.3, baseline_tiers=("tier2",),
       note="LLM judge, the methodology's 1–5 scale"),
    _m("avg_e2e_score", "E2E-оценка", "E2E score", SHARE, "higher", "mean",
       "сквозная оценка ответа судьёй, 1–5 → (s−1)/4", "end-to-end judge score, 1–5 → (s−1)/4",
       item_field="e2e_score", baseline=0.70, margin=0.05, baseline_tiers=("tier3",)),
    _m("pass_rate", "Доля PASS", "Pass rate", SHARE, "higher", "rate",
       "доля элементов с вердиктом PASS среди оценённых", "share of PASS verdicts among the judged items",
       item_field="passed", baseline=0.80, margin=0.05, baseline_tiers=("tier3",),
       note="PASS verdicts of the RAG + LLM answer-quality test's judge"),
    _m("gate_pass_rate", "Доля PASS для гейта", "Gate pass rate", SHARE, "higher", "rate",
       "прошедшие / ВСЕ элементы: ответ — при PASS; отказ бота проходит только на вопросе без ответа; сбой не проходит",
       "passing / ALL items: an answer on PASS; a decline passes only on an unanswerable question; a failure never"),
    _m("min_pass_rate", "Порог гейта", "Gate threshold", SHARE, "none", "setting",
       "минимальная доля PASS для выкладки", "minimum pass rate for a deployment"),
    _m("avg_rag_judge_score", "Оценка RAG-судьи", "RAG judge score", SHARE, "higher", "mean",
       "min(корректность, обоснованность) судьи из теста RAG + LLM", "min(correctness, groundedness) of the RAG + LLM test's judge",
       item_field="rag_score"),
    _m("avg_semantic_similarity", "Семантическое сходство", "Semantic similarity", SIGNED, "higher", "mean",
       "косинус эмбеддингов ответа и эталона (агрегат по моделям эмбеддингов)",
       "cosine of the answer and reference embeddings (aggregated over embedding models)",
       item_field="semantic_similarity", bands=SIMILARITY_BANDS, baseline=0.75, margin=0.05,
       baseline_tiers=("tier3",), note="cosine to the reference answer"),
    _m("avg_euclidean_distance", "Евклидово расстояние", "Euclidean distance", DIST2, "lower", "mean",
       "‖e_ответ − e_эталон‖ единичных векторов (0–2)", "‖e_answer − e_reference‖ of unit vectors (0–2)",
       item_field="euclidean_distance", baseline=0.70, margin=0.10, baseline_tiers=("tier3",),
       note="unit vectors; lower is better"),
    _m("retrieval_hit_rate", "Попадание поиска", "Retrieval hit rate", SHARE, "higher", "rate",
       "доля вопросов, где найден релевантный чанк", "share of questions where a relevant chunk was retrieved",
       item_field="retrieval_hit"),
    _m("avg_rouge1_f", "ROUGE-1 F", "ROUGE-1 F", SHARE, "higher", "mean",
       "F-мера совпадения униграмм с эталоном (токенизатор Юникода); > 0.4 — приемлемо",
       "unigram-overlap F-measure with the reference (Unicode tokenizer); > 0.4 acceptable", item_field="rouge1_f"),
    _m("avg_rouge2_f", "ROUGE-2 F", "ROUGE-2 F", SHARE, "higher", "mean",
       "F-мера совпадения биграмм с эталоном", "bigram-overlap F-measure with the reference", item_field="rouge2_f"),
    _m("avg_rougeL_f", "ROUGE-L F", "ROUGE-L F", SHARE, "higher", "mean",
       "F-мера наибольшей общей подпоследовательности; > 0.5 — хорошо",
       "longest-common-subsequence F-measure; > 0.5 good", item_field="rougeL_f",
       baseline=0.30, margin=0.05, baseline_tiers=("tier2",), note="Unicode tokenizer"),
    _m("avg_bleu", "BLEU (ср. по ответам)", "BLEU (mean sentence)", PERCENT, "higher", "mean",
       "среднее sentence-BLEU (sacrebleu, 0–100); полосы методики — у корпусного BLEU",
       "mean of sentence BLEU (sacrebleu, 0–100); the methodology's bands belong to corpus BLEU", item_field="bleu"),
    _m("corpus_bleu", "BLEU (корпусный)", "BLEU (corpus)", PERCENT, "higher", "statistic",
       "корпусный BLEU (sacrebleu) по всем ответам: BP · exp(Σ wₙ log pₙ), n-граммы суммируются по корпусу",
       "sacrebleu corpus_bleu over all answers: BP · exp(Σ wₙ log pₙ), n-gram counts summed over the corpus",
       bands=BLEU_BANDS, baseline=20.0, margin=5.0, baseline_tiers=("tier2",),
       note="sacrebleu corpus BLEU; the methodology's reading bands"),
    _m("avg_chrf", "chrF", "chrF", PERCENT, "higher", "mean", "F-мера символьных n-грамм (sacrebleu, 0–100)",
       "character n-gram F-score (sacrebleu, 0–100)", item_field="chrf"),
    _m("response_exact_match_rate", "Совпадение повторов", "Repeat exact match", SHARE, "higher", "mean",
       "доля идентичных пар повторов одного запроса (самосогласованность, не эталон)",
       "share of identical pairs among the repeats of one request (self-consistency, not the reference)",
       item_field="response_exact_match"),
    _m("response_semantic_consistency", "Смысловая согласованность повторов", "Repeat semantic consistency",
       SIGNED, "higher", "mean", "средний попарный косинус эмбеддингов повторов",
       "mean pairwise cosine of the repeats' embeddings", item_field="response_semantic_consistency"),
    _count("n_context_truncated", "Обрезанных контекстов", "Truncated contexts",
           "элементы, чей контекст обрезан до max_context_chars", "items whose context was cut at max_context_chars",
           "lower"),
    _count("n_skipped_unanswerable", "Пропущено вопросов без ответа", "Skipped unanswerable",
           "вопросы без эталонного контекста, не подаваемые в Tier 2",
           "questions without a reference context, left out of Tier 2"),
    *_latency("generation_latency", "Задержка генерации", "Generation latency"),
    *_latency("latency", "Задержка", "Latency"),
)

# ---- Tier 3: outcomes of the bot's replies (voproshalych_eval.bot_api; rates over ALL items; ``answered_rate``
# and ``error_rate`` share the real-user and judge tiers' entries)
_add(
    _m("not_found_rate", "Доля «не найдено»", "Not-found rate", SHARE, "none", "rate",
       "отказы «не найдено» / все вопросы (верны на вопросах без ответа)",
       "'not found' declines / all questions (right on unanswerable questions)"),
    _m("banned_rate", "Доля запретов", "Banned rate", SHARE, "none", "rate",
       "ответы, запрещённые судьёй показа / все вопросы", "answers banned by the show/no-show judge / all questions"),
    _count("n_answered", "Ответов", "Answered", "вопросы с ответом (по ним средние судьи)",
           "answered questions (the judge means are over these)"),
    _count("n_not_found", "«Не найдено»", "Not found", "отказы «не найдено»", "'not found' declines"),
    _count("n_banned", "Запретов", "Banned", "ответы, запрещённые судьёй показа", "answers banned by the show judge"),
    _count("n_error", "Ошибок запроса", "Request errors", "вопросы без пригодного ответа API",
           "questions without a usable API reply", "lower"),
    _count("n_context_reconstructed", "Восстановленных контекстов", "Reconstructed contexts",
           "ответы, для которых контекст взят из базы знаний по URL страницы",
           "answers whose context was read from the knowledge base by the page URL"),
    _count("n_answered_unanswerable", "Ответов на вопросы без ответа", "Answers to unanswerable questions",
           "ответы бота на вопросы, для которых в базе нет ответа", "answers to questions the knowledge base cannot answer"),
    _m("url_hit_rate", "Попадание в страницу", "Page hit rate", SHARE, "higher", "rate",
       "доля ответов, чей URL страницы — релевантный", "share of answers whose page URL is a relevant one",
       item_field="url_hit"),
    _count("n_context_cut", "Обрезанных контекстов", "Contexts cut to fit",
           "ответы, чей контекст обрезан до окна контекста модели-судьи",
           "answers whose context was cut to fit the judge model's context window"),
    _count("llm_retries", "Повторных запросов к LLM", "LLM requests retried",
           "запросы, повторённые после тайм-аута, 429 или 5xx (все запуски прогона)",
           "requests repeated after a timeout, a 429 or a 5xx (every execution of the run)"),
    _count("llm_recovered", "Вызовов LLM, спасённых повтором", "LLM calls recovered by a retry",
           "вызовы, успешные только после повтора", "calls that succeeded only after a retry"),
    _count("llm_failed_calls", "Неудачных вызовов LLM", "Failed LLM calls",
           "вызовы без пригодного ответа (по видам — в failure_kinds)",
           "calls without a usable reply (by kind in failure_kinds)", "lower"),
)

# ---- judge metrics (Ragas Response Relevancy, 002, 003, 004; judge_metrics runs)
_add(
    _m("avg_rag_judge", "RAG-судья (тест RAG + LLM)", "RAG judge (RAG + LLM test)", SHARE, "higher", "mean",
       "min(корректность, обоснованность), 0–1", "min(correctness, groundedness), 0–1", item_field="score"),
    _m("avg_aspect_critic", "AspectCritic", "AspectCritic", SHARE, "higher", "rate",
       "доля ответов, выполняющих критерий (большинство из strictness голосов)",
       "share of answers meeting the criterion (majority of strictness votes)", item_field="score"),
    _m("avg_simple_criteria_score", "SimpleCriteriaScore", "SimpleCriteriaScore", SHARE, "higher", "mean",
       "(s − min) / (max − min), s ограничено [min, max]; медиана прогонов",
       "(s − min) / (max − min), s clamped to [min, max]; median of the runs", item_field="score"),
    _m("avg_rubrics_score", "RubricsScore (уровень)", "RubricsScore (level)", LEVEL, "higher", "mean",
       "средний выбранный уровень рубрики (целое число уровня у каждого ответа)",
       "mean chosen rubric level (each answer gets an integer level)", item_field="score"),
    _m("avg_rubrics_score_norm", "RubricsScore, норм. 0–1", "RubricsScore, normalised 0–1", SHARE, "higher", "mean",
       "(уровень − низший) / (высший − низший)", "(level − lowest) / (highest − lowest)", item_field="score_norm"),
    _m("avg_response_relevancy", "Релевантность по обратным вопросам", "Response relevancy", SHARE, "higher", "mean",
       "mean cos(вопрос, вопросы, сгенерированные из ответа), отрицательные → 0; уклончивый ответ — 0",
       "mean cos(question, questions generated from the answer), negatives → 0; a noncommittal answer scores 0",
       item_field="score", bands=RELEVANCY_BANDS),
    _m("avg_show_no_show", "Доля «показывать»", "Show share", SHARE, "none", "rate",
       "доля вердиктов «Yes» production-судьи", "share of 'Yes' verdicts of the production judge", item_field="score"),
)

# ---- Tier Judge: stability of the benchmark judge (scores normalised to 0–1 by the judged metric's scale)
_add(
    _m("consistency_score", "Согласованность судьи", "Judge consistency", SHARE, "higher", "mean",
       "1 − ср. СКО повторов / макс. возможное СКО шкалы", "1 − mean repeat std / the scale's largest possible std",
       baseline=0.90, margin=0.05, baseline_tiers=("judge",), note="1 − normalised score std over repeats"),
    _m("avg_score_std", "Ср. СКО повторов", "Mean repeat std", SHARE, "lower", "mean",
       "среднее по элементам СКО оценок повторов (шкала 0–1)", "mean over items of the repeats' score std (0–1 scale)"),
    _m("avg_score", "Ср. оценка", "Mean score", SHARE, "none", "mean",
       "среднее всех оценок (нормировано к 0–1)", "mean of all scores (normalised to 0–1)"),
    _count("n_calls", "Вызовов", "Calls", "все вызовы судьи", "all judge calls"),
    _m("error_rate", "Доля сбоев API", "API failure rate", SHARE, "lower", "rate",
       "сбои транспорта (таймаут, 429 после повторов, 5xx, соединение) / применимые вызовы "
       "(Tier 3: вопросы без пригодного ответа API после повторов / все вопросы)",
       "transport failures (timeout, 429 after retries, 5xx, connection) / applicable calls "
       "(Tier 3: questions without a usable API reply after retries / all questions)",
       baseline=0.02, margin=0.03, baseline_tiers=("judge",), note="transport failures / applicable calls"),
    _m("parse_failure_rate", "Доля неразобранных ответов", "Parse failure rate", SHARE, "lower", "rate",
       "ответы, которые не удалось разобрать / применимые вызовы", "unparseable replies / applicable calls"),
    _count("n_errors", "Сбоев API", "API failures", "сбои транспорта", "transport failures", "lower"),
    _count("n_parse_failures", "Неразобранных ответов", "Parse failures", "ответы, которые не удалось разобрать",
           "replies that could not be parsed", "lower"),
    _count("n_not_applicable", "Неприменимо", "Not applicable",
           "вызовы без нужного поля (например, эталона) — не сбои", "calls missing a required field (e.g. the reference) — not failures"),
    _m("verdict_threshold", "Порог вердикта", "Verdict threshold", SHARE, "none", "setting",
       "оценка ≥ порога — «прошёл» (шкала 0–1)", "score ≥ threshold passes (0–1 scale)"),
    _m("exact_agreement_rate", "Полное совпадение повторов", "Exact agreement", SHARE, "higher", "rate",
       "доля элементов, все повторы которых равны", "share of items whose repeats are all equal"),
    _m("flip_rate", "Доля смен вердикта", "Flip rate", SHARE, "lower", "rate",
       "доля элементов, вердикт которых меняется между повторами", "share of items whose verdict changes between repeats"),
    _m("intra_judge_fleiss_kappa", "Каппа Флейса (повторы)", "Fleiss' kappa (repeats)", SIGNED, "higher", "statistic",
       "согласие вердиктов повторов сверх случайного", "agreement of the repeats' verdicts beyond chance"),
    _m("inter_judge_fleiss_kappa", "Каппа Флейса (модели)", "Fleiss' kappa (models)", SIGNED, "higher", "statistic",
       "согласие моделей-судей сверх случайного", "agreement of the judge models beyond chance"),
    _m("inter_judge_cohen_kappa", "Каппа Коэна (модели)", "Cohen's kappa (models)", SIGNED, "higher", "statistic",
       "согласие двух моделей-судей сверх случайного", "agreement of two judge models beyond chance"),
    _m("inter_judge_mean_abs_diff", "Ср. расхождение моделей", "Mean model difference", SHARE, "lower", "mean",
       "среднее |разность| средних оценок двух моделей (0–1)", "mean |difference| of two models' mean scores (0–1)"),
)

# ---- Tier Judge Pipeline: the show/no-show judge as a classifier
_add(
    _count("n_valid", "С вердиктом", "With a verdict", "элементы с разобранным вердиктом", "items with a parsed verdict"),
    _count("n_failed", "Без вердикта", "Without a verdict", "элементы без вердикта (сбой)", "items without a verdict (failure)",
           "lower"),
    _m("accuracy", "Доля верных решений", "Accuracy", SHARE, "higher", "rate", "(TP + TN) / все с вердиктом",
       "(TP + TN) / all with a verdict", item_field="correct", baseline=0.85, margin=0.05,
       baseline_tiers=("judge_pipeline",), note="show/no-show decision"),
    _m("accuracy_ci", "Доля верных решений (с интервалом)", "Accuracy (with CI)", SHARE, "higher", "rate",
       "та же доля верных решений как среднее по элементам с бутстреп-интервалом",
       "the same accuracy as a mean over items with a bootstrap CI", item_field="correct"),
    _m("precision", "Precision", "Precision", SHARE, "higher", "rate", "TP / (TP + FP), положительный класс — показать",
       "TP / (TP + FP), positive class = show"),
    _m("recall", "Recall", "Recall", SHARE, "higher", "rate", "TP / (TP + FN)", "TP / (TP + FN)"),
    _m("f1_score", "F1", "F1", SHARE, "higher", "rate", "2PR / (P + R)", "2PR / (P + R)", baseline=0.85, margin=0.05,
       baseline_tiers=("judge_pipeline",), note="show/no-show decision"),
    _m("cohen_kappa", "Каппа Коэна", "Cohen's kappa", SIGNED, "higher", "statistic",
       "согласие вердиктов с разметкой сверх случайного", "agreement of the verdicts with the labels beyond chance"),
)
for _cell, _ru, _en in (("tp", "TP", "TP"), ("fp", "FP", "FP"), ("fn", "FN", "FN"), ("tn", "TN", "TN")):
    _add(_count(f"confusion_matrix.{_cell}", _ru, _en, "ячейка матрицы ошибок", "confusion matrix cell"))

# ---- UX
_add(
    # a load statistic, not quality: a looser cache (larger distance) hits more AND serves more wrong answers, so
    # the hit rate has no better direction and no baseline; the false-hit rate carries the UX baseline (issue 22)
    _m("cache_hit_rate", "Доля попаданий в кэш", "Cache hit rate", SHARE, "none", "rate",
       "доля ходов, обслуженных из кэша (нагрузка; качество кэша — ложные попадания и точность)",
       "share of turns served from the cache (load; the cache's quality is its false hits and precision)"),
    _m("context_preservation", "Сохранение контекста", "Context preservation", SHARE, "higher", "rate",
       "доля уточняющих вопросов, оставшихся на странице исходного", "share of follow-ups that stay on the first question's page",
       baseline=0.80, margin=0.05, baseline_tiers=("ux",)),
    _m("multi_turn_consistency", "Согласованность при переспросе", "Re-ask consistency", SIGNED, "higher", "mean",
       "косинус ответов на один вопрос, заданный повторно в диалоге", "cosine of the answers to a question re-asked in a dialog"),
    _m("multi_turn_source_agreement", "Тот же источник при переспросе", "Re-ask source agreement", SHARE, "higher",
       "rate", "доля переспросов с той же страницей-источником", "share of re-asks answered from the same page"),
    _count("n_turns", "Ходов", "Turns", "все ходы диалогов", "all dialog turns"),
    _count("n_sessions", "Сессий", "Sessions", "сессии (диалоги)", "sessions (dialogs)"),
    _m("avg_session_length", "Ср. длина сессии", "Mean session length", COUNT, "none", "mean",
       "среднее число вопросов в сессии", "mean questions per session"),
    _m("single_question_session_rate", "Сессий из одного вопроса", "Single-question sessions", SHARE, "none", "rate",
       "доля сессий из одного вопроса", "share of one-question sessions"),
    _m("first_turn_hit_rate", "Попадание на первом ходе", "First-turn hit rate", SHARE, "higher", "rate",
       "доля диалогов, где первый ход нашёл релевантный чанк", "share of dialogs whose first turn retrieved a relevant chunk"),
    _m("cache_precision", "Точность кэша", "Cache precision", SHARE, "higher", "rate",
       "попадания на перефразах / все попадания", "hits on paraphrases / all hits"),
    _m("cache_recall", "Полнота кэша", "Cache recall", SHARE, "higher", "rate",
       "попадания на перефразах / все перефразы", "hits on paraphrases / all paraphrases"),
    _m("cache_false_hit_rate", "Ложные попадания в кэш", "Cache false hit rate", SHARE, "lower", "rate",
       "попадания на разных вопросах / все разные пары", "hits on different questions / all different pairs",
       baseline=0.05, margin=0.05, baseline_tiers=("ux",), note="different questions served a cached answer"),
    _count("n_cache_pairs", "Пар для кэша", "Cache pairs", "размеченные пары вопросов", "labelled question pairs"),
)

# ---- real-user analytics
_add(
    _count("n_questions_used", "Вопросов в анализе", "Questions analysed", "вопросы, реально вошедшие в анализ",
           "questions actually analysed"),
    _m("answered_rate", "Доля с ответом", "Answered share", SHARE, "higher", "rate",
       "доля вопросов, получивших ответ", "share of questions that got an answer"),
    _m("effective_answered_rate", "Доля с настоящим ответом", "Effective answered share", SHARE, "higher", "rate",
       "доля вопросов с настоящим ответом (без «ответ не найден», отказов и шаблонов)",
       "share of questions with a real answer (no 'not found', refusals or templates)"),
    _count("n_declined", "Отказов под видом ответа", "Declines in disguise",
           "непустые ответы, которые на деле отказ или шаблон", "non-empty answers that are a decline or a template",
           "lower"),
    _m("declined_share_of_answered", "Доля отказов среди ответов", "Declines among answers", SHARE, "lower", "rate",
       "отказы под видом ответа / непустые ответы", "declines in disguise / non-empty answers"),
    _count("n_empty_questions", "Строк без текста вопроса", "Rows without question text",
           "события без текста (стикер, пробелы): в сессиях и пользователях, не в текстовом анализе",
           "events without text (a sticker, whitespace): in sessions and users, not in text analyses"),
    _count("n_stored_embeddings", "С сохранёнными эмбеддингами", "With stored embeddings",
           "вопросы с эмбеддингом в базе", "questions with an embedding in the database"),
    _count("n_embedded", "Досчитано эмбеддингов", "Embedded now", "эмбеддинги, посчитанные в этом запуске",
           "embeddings computed in this run"),
    _m("chunk_coverage", "Покрытие чанков", "Chunk coverage", SHARE, "higher", "rate",
       "доля чанков, извлечённых хотя бы раз (top-k)", "share of chunks retrieved at least once (top-k)",
       baseline=0.50, margin=0.10, baseline_tiers=("real_users",), note="share of chunks retrieved at least once"),
    _m("chunk_coverage@1", "Покрытие чанков @1", "Chunk coverage @1", SHARE, "higher", "rate",
       "доля чанков, оказавшихся первыми хотя бы раз", "share of chunks ranked first at least once"),
    _m("page_coverage", "Покрытие страниц", "Page coverage", SHARE, "higher", "rate",
       "доля страниц, извлечённых хотя бы раз", "share of pages retrieved at least once"),
    _m("page_coverage@1", "Покрытие страниц @1", "Page coverage @1", SHARE, "higher", "rate",
       "доля страниц, оказавшихся первыми хотя бы раз", "share of pages ranked first at least once"),
    _count("n_never_retrieved", "Ни разу не извлечены", "Never retrieved", "чанки, не найденные ни разу",
           "chunks never retrieved", "lower"),
    _m("top10pct_chunk_share", "Доля 10% самых частых чанков", "Top-10% chunk share", SHARE, "none", "rate",
       "доля извлечений, приходящихся на 10% самых частых чанков", "share of retrievals going to the top 10% chunks"),
    _m("mean_top1_similarity", "Ср. сходство первого чанка", "Mean top-1 similarity", SIGNED, "higher", "mean",
       "средний косинус вопроса и первого найденного чанка", "mean cosine of a question and its first hit"),
    _count("n_topics", "Тем", "Topics", "число найденных тем", "topics found"),
    _m("best_silhouette", "Силуэт кластеризации", "Clustering silhouette", SIGNED, "higher", "statistic",
       "лучший коэффициент силуэта при выборе числа тем", "best silhouette when choosing the number of topics"),
    _m("seed_ari_mean", "Устойчивость тем (ARI)", "Topic stability (ARI)", SIGNED, "higher", "statistic",
       "средний скорректированный индекс Рэнда между темами и KMeans с другими случайными начальными центрами (1 — те же темы)",
       "mean adjusted Rand index between the topics and KMeans from other random starting centres (1 = the same topics)"),
    _count("n_emerging_topics", "Новых тем", "Emerging topics",
           "темы, которых почти не было в прошлом периоде и которые выросли значимо (биномиальный тест)",
           "topics nearly absent in the previous period that grew significantly (binomial test)"),
    _count("n_emerging_terms", "Новых слов в вопросах", "Emerging words",
           "слова, которых почти не было в прошлом периоде и которые выросли значимо (биномиальный тест)",
           "words nearly absent in the previous period that grew significantly (binomial test)"),
    _count("n_growing_topics", "Растущих тем", "Growing topics",
           "темы, доля которых выросла в ≥ 1.5 раза значимо (биномиальный тест)",
           "topics whose share grew ≥ 1.5 times significantly (binomial test)"),
    _count("n_clustered", "Вопросов в кластерах", "Clustered questions",
           "вопросы, разбитые на темы (без приветствий, благодарностей и т. п.)",
           "questions clustered into topics (no greetings, thanks, ...)"),
    _count("unique_users", "Пользователей", "Users", "уникальные пользователи", "unique users"),
    _m("questions_per_user_mean", "Вопросов на пользователя", "Questions per user", COUNT, "none", "mean",
       "среднее число вопросов пользователя", "mean questions per user"),
    _m("turns_per_session_mean", "Ходов на сессию", "Turns per session", COUNT, "none", "mean",
       "среднее число ходов в сессии", "mean turns per session"),
    _m("slang_share", "Доля сленга", "Slang share", SHARE, "none", "rate", "доля вопросов со сленгом",
       "share of questions with slang"),
    _m("exact_repeat_share", "Доля точных повторов", "Exact repeat share", SHARE, "none", "rate",
       "доля вопросов, повторяющих уже заданный", "share of questions repeating an earlier one"),
    _m("near_duplicate_share", "Доля почти-дубликатов", "Near-duplicate share", SHARE, "none", "rate",
       "доля вопросов, почти совпадающих с другим", "share of questions nearly identical to another"),
    _m("share_greeting", "Доля приветствий", "Greeting share", SHARE, "none", "rate", "доля приветствий",
       "share of greetings"),
    _m("share_thanks", "Доля благодарностей", "Thanks share", SHARE, "none", "rate", "доля благодарностей",
       "share of thanks"),
    _m("share_off_topic", "Доля не по теме", "Off-topic share", SHARE, "none", "rate", "доля вопросов не по теме",
       "share of off-topic questions"),
    _m("share_jailbreak", "Доля попыток взлома", "Jailbreak share", SHARE, "none", "rate",
       "доля попыток обойти инструкции", "share of jailbreak attempts"),
)

# ---- synthetic golden-set generation (a tool run: counts, not quality scores)
_add(
    _count("size_requested", "Запрошено вопросов", "Questions requested", "размер набора, заданный при запуске",
           "dataset size asked for", kind="setting"),
    _count("n_slots", "Слотов", "Slots", "вопросов запланировано (с запасными)", "questions planned (spares included)"),
    _count("pages_total", "Страниц в базе", "Pages in the knowledge base", "страницы (URL) в выбранной части базы",
           "pages (URLs) of the chosen part of the knowledge base"),
    _count("pages_covered", "Страниц покрыто", "Pages covered", "страницы среди relevant_urls сохранённых вопросов",
           "pages among the stored items' relevant_urls", "higher"),
    _count("n_missing_items", "Не сгенерировано", "Not generated yet", "слоты без записанного результата (продолжите запуск)",
           "slots without a recorded result (resume the run)", "lower"),
    _count("n_surplus", "Лишних вопросов", "Surplus questions", "прошли фильтры, но не понадобились (больше размера)",
           "passed the gates but were not needed (over the size)"),
)

# ---- verdicts (issue 22 §3): usable judgements, per-call failures of a jury, undecided ties
_add(
    _m("judged_share", "Доля оценённых", "Judged share", SHARE, "higher", "rate",
       "элементы с пригодной оценкой судьи / элементы, которые можно было оценить; ниже "
       "VOPROSHALYCH_EVAL_MIN_JUDGED_SHARE (0,5) или ни одного — запуск завершается с ошибкой",
       "items with a usable judgement / items that could be judged; below VOPROSHALYCH_EVAL_MIN_JUDGED_SHARE (0.5) "
       "or none at all — the run is failed"),
    _count("n_failed_calls", "Вызовов без ответа", "Failed calls",
           "вызовы судьи, не давшие оценки (любой вид сбоя)", "judge calls that gave no score (any failure kind)",
           "lower"),
    _m("parse_failure_rate_calls", "Доля неразобранных ответов (вызовы)", "Parse failure rate (calls)", SHARE, "lower",
       "rate", "неразобранные ответы / все вызовы судей (каждая модель, каждый повтор)",
       "unparseable replies / every judge call (each model, each repeat)"),
    _m("error_rate_calls", "Доля сбоев API (вызовы)", "API failure rate (calls)", SHARE, "lower", "rate",
       "сбои транспорта / все вызовы судей (каждая модель, каждый повтор)",
       "transport failures / every judge call (each model, each repeat)"),
    _count("n_undecided", "Без решения (ничья)", "Undecided (ties)",
           "элементы, где вердикты судей разделились поровну: не сбой, вне метрик точности и доли PASS",
           "items whose judges' verdicts tie: not a failure, left out of accuracy and pass rates"),
    _m("failure_kinds.undecided", "Без решения (ничья судей)", "Undecided (judges tie)", COUNT, "none", "count",
       "число элементов: вердикты судей разделились поровну", "items whose judges' verdicts tie"),
)

# ---- what-if on a sandbox (tiers/whatif.py): before / after blocks reuse Tier 1's keys
_add(
    _count("n_top1_changed", "Сменился топ-1", "Top-1 changed",
           "вопросы регрессионного набора, у которых сменилась первая страница выдачи",
           "regression questions whose top-1 page changed", "lower"),
    # the Tier 3 part (``tier3.before.*`` / ``tier3.after.*``; n_answered, n_declined, n_error, answered_rate and
    # pass_rate are the shared entries)
    _count("n_judged", "Оценено судьёй", "Judged", "ответы с вердиктом судьи PASS/FAIL",
           "answers with a PASS/FAIL verdict of the judge"),
    _count("n_passed", "PASS судьи", "Judge PASS", "ответы, которые судья признал верными и обоснованными",
           "answers the judge found correct and grounded", "higher"),
    _count("n_judge_failures", "Сбоев судьи", "Judge failures", "ответы, которые судья не смог оценить (любой сбой)",
           "answers the judge could not score (any failure)", "lower"),
    _count("n_gap_questions", "Вопросов разрыва", "Gap questions", "все вопросы разрывов в сравнении",
           "every gap question of the comparison"),
    _count("n_sampled", "Вопросов в выборке", "Questions sampled", "вопросы разрывов, прошедшие Tier 3 (выборка с seed)",
           "gap questions run through Tier 3 (a seeded sample)"),
    _count("top_k", "Чанков в контексте", "Chunks in the context", "первые k найденных чанков, из которых генерируется ответ "
           "(в продакшене 1)", "the first k retrieved chunks the answer is generated from (production: 1)", kind="setting"),
)

#: groups whose children are all alike (``timings_s.embed`` is seconds whatever the step)
GROUPS: dict[str, MetricSpec] = {
    "timings_s": _m("timings_s", "Время этапа", "Step time", SECONDS, "none", "statistic",
                    "длительность этапа, секунды", "duration of a step, seconds"),
    "n_by_kind": _count("n_by_kind", "Векторов:", "Vectors:", "число векторов этого вида",
                        "vectors of this kind"),
    "unanswerable_top_distance": _m("unanswerable_top_distance", "Расстояние первого результата (без ответа)",
                                    "Top-hit distance (unanswerable)", DISTANCE, "none", "statistic",
                                    "расстояние до первого найденного для вопросов без ответа (для порога «нет ответа»)",
                                    "distance of the top hit for unanswerable questions (for a no-answer threshold)"),
    "hnsw": _count("hnsw", "Параметр HNSW", "HNSW parameter", "параметр индекса", "index parameter", kind="setting"),
    "by_type": _count("by_type", "Вопросов типа", "Questions of a type", "сохранённые вопросы этого типа",
                      "stored questions of this type"),
    "requested_by_type": _count("requested_by_type", "Запрошено вопросов типа", "Questions of a type requested",
                                "план выборки по типам", "the sampling plan per type", kind="setting"),
    "dropped": _count("dropped", "Отброшено фильтром", "Dropped by a gate",
                      "кандидаты, отброшенные этим фильтром качества", "candidates this quality gate dropped"),
    "thresholds": _count("thresholds", "Порог фильтра", "Gate threshold", "порог фильтра качества", "quality gate threshold",
                         kind="setting"),
    "errors_by_kind": _count("errors_by_kind", "Ошибок вида", "Errors of kind", "вопросы с ошибкой этого вида",
                             "questions failed with this kind of error", "lower"),
    "declines_by_reason": _count("declines_by_reason", "Отказов", "Declines", "отказы бота с этим текстом",
                                 "the bot's declines with this body"),
    "transport_failures": _count("transport_failures", "Сбоев транспорта", "Transport failures",
                                 "все встреченные сбои этого вида, включая повторённые удачно",
                                 "every failure of this kind met, retried ones included", "lower"),
    "outcomes_by_answerability": _count("outcomes_by_answerability", "Исходов", "Outcomes",
                                        "вопросы (с ответом в базе / без) с этим исходом",
                                        "questions (answerable / unanswerable) with this outcome"),
    "context_sources": _count("context_sources", "Контекстов из", "Contexts from",
                              "ответы, чей контекст получен этим путём", "answers whose context came this way"),
    # every LLM run: ``cost_usd.<model>`` and ``cost_usd.total`` (llm/prices.py; None = unknown price or usage)
    "cost_usd": _m("cost_usd", "Стоимость, $", "Cost, $", USD, "none", "statistic",
                   "токены × цена модели за 1 млн (таблица цен); без цены — неизвестно",
                   "tokens × the model's price per 1M (price table); no price → unknown"),
}


# ---- real-user analytics: the learned answer classifier (issue 22)
_add(
    _m("effective_answered_rate_ci", "Доля с настоящим ответом (с интервалом)", "Effective answered share (with CI)",
       SHARE, "higher", "rate",
       "(K + P·PPV + N·FOR) / n: K строк размеченных человеком ответов, P и N строк, которые модель назвала "
       "ответом и отказом; PPV и FOR из кросс-валидации на разметке (апостериорные Beta Джеффриса), 95% интервал "
       "по 4000 выборкам",
       "(K + P·PPV + N·FOR) / n: K rows of answers a person labelled, P and N rows the model called an answer "
       "and a decline; PPV and FOR from cross-validation on the labels (Jeffreys Beta posteriors), 95% interval "
       "over 4000 draws"),
    _m("answer_classifier_accuracy", "Точность классификатора ответов", "Answer classifier accuracy", SHARE,
       "higher", "rate",
       "доля размеченных человеком текстов ответов, класс которых модель угадала в кросс-валидации; интервал Уилсона",
       "share of the person-labelled answer texts whose class the model got right in cross-validation; "
       "Wilson interval"),
    _count("n_answer_labels", "Размечено текстов ответов", "Labelled answer texts",
           "тексты ответов бота, класс которых задал человек (обучающая и проверочная выборка)",
           "bot answer texts whose class a person gave (the training and checking sample)"),
)

#: per-item fields that runs compare item by item but no aggregate is the mean of (Tier 1's per-query values)
ITEM_FIELDS: dict[str, MetricSpec] = {e.key: e for e in (
    _m("first_relevant_rank", "Ранг первого релевантного", "First relevant rank", RANK, "lower", "statistic",
       "позиция первого релевантного чанка в выдаче (1 — первый)", "position of the first relevant chunk (1 = first)"),
    _m("first_relevant_rank_url", "Ранг первой релевантной страницы", "First relevant page rank", RANK, "lower",
       "statistic", "позиция первой релевантной страницы среди различных страниц выдачи",
       "position of the first relevant page among the distinct pages retrieved"),
    _m("top_distance", "Расстояние лучшего результата", "Top-hit distance", DISTANCE, "none", "statistic",
       "расстояние до первого найденного чанка", "distance of the top retrieved chunk"),
    _m("url_depth", "Глубина поиска страниц", "Page search depth", COUNT, "none", "setting",
       "сколько чанков извлечено, чтобы найти нужное число различных страниц",
       "chunks retrieved to find the wanted number of distinct pages"),
)}

# ---- judge agreement with people (metrics/agreement.py; judge-agreement, judge-align, the Judge agreement page)
_add(
    _m("judge_kappa", "Каппа Коэна (судья и люди)", "Cohen's kappa (judge vs people)", SIGNED, "higher", "statistic",
       "(p_o − p_e) / (1 − p_e) вердиктов судьи и разметки людей", "(p_o − p_e) / (1 − p_e) of the judge's verdicts "
       "and the people's labels"),
    _m("judge_weighted_kappa", "Взвешенная каппа (судья и люди)", "Weighted kappa (judge vs people)", SIGNED, "higher",
       "statistic", "1 − Σw·O / Σw·E, квадратичные веса", "1 − Σw·O / Σw·E, quadratic weights"),
    _m("judge_alpha", "Альфа Криппендорфа (судья и люди)", "Krippendorff's alpha (judge vs people)", SIGNED, "higher",
       "statistic", "1 − D_o / D_e, порядковая шкала", "1 − D_o / D_e, ordinal level"),
    _m("judge_spearman", "Спирмен (судья и люди)", "Spearman (judge vs people)", SIGNED, "higher", "statistic",
       "корреляция рангов оценок судьи и людей", "rank correlation of the judge's and the people's scores"),
    _m("judge_bias", "Смещение судьи", "Judge bias", Scale("difference", -INF, INF, "разность на шкале метрики",
                                                            "difference on the metric's scale"), "none", "mean",
       "среднее (судья − человек) на шкале метрики", "mean (judge − human) on the metric's scale"),
)

#: key families for cut-offs other than the defaults (no default baseline)
_FAMILIES: tuple[tuple[re.Pattern[str], object], ...] = (
    (re.compile(r"^(hit_rate|recall|precision|ndcg)@(\d+)$"), "retrieval"),
    (re.compile(r"^recall@(\d+)_vs_exact$"), "hnsw_recall"),
)

#: prefixes naming the same metric computed for another subject
PREFIXES: dict[str, tuple[str, str]] = {"benchmark_": ("Эталонный судья · ", "Benchmark judge · ")}

#: every concrete entry by key
CATALOG: dict[str, MetricSpec] = {}
for _e in _ENTRIES:
    if _e.key in CATALOG:
        raise RuntimeError(f"metric {_e.key!r} is catalogued twice")
    if _e.direction not in DIRECTIONS or _e.kind not in KINDS:
        raise RuntimeError(f"metric {_e.key!r}: bad direction or kind")
    if _e.baseline is not None and not _e.scale.contains(_e.baseline):
        raise RuntimeError(f"metric {_e.key!r}: default baseline {_e.baseline} outside its scale {_e.scale.key}")
    CATALOG[_e.key] = _e


def _family(key: str) -> MetricSpec | None:
    m = _FAMILIES[0][0].match(key)
    if m:
        name, k = m.group(1), int(m.group(2))
        spec_ = next(s for s in _retrieval_family(k) if s.key.startswith(f"{name}@"))
        return replace(spec_, baseline=None, baseline_tiers=(), note="")
    m = _FAMILIES[1][0].match(key)
    if m:
        depth = m.group(1)
        return _m(key, f"Recall@{depth} HNSW к точному поиску", f"HNSW recall@{depth} vs exact search", SHARE,
                  "higher", "statistic", f"|top-{depth} HNSW ∩ top-{depth} точного| / |top-{depth} точного|",
                  f"|HNSW top-{depth} ∩ exact top-{depth}| / |exact top-{depth}|")
    return None


def _resolve(key: str) -> MetricSpec | None:
    if key in CATALOG:
        return CATALOG[key]
    fam = _family(key)
    if fam is not None:
        return fam
    for prefix, (ru, en) in PREFIXES.items():
        if key.startswith(prefix):
            inner = _resolve(key.removeprefix(prefix))
            if inner is not None:
                return replace(inner, key=key, ru=ru + inner.ru, en=en + inner.en, baseline=None, baseline_tiers=())
    return None


#: statistic members of a group (``unanswerable_top_distance.mean``) in words; other members (model ids) are data
MEMBER_LABELS: dict[str, tuple[str, str]] = {
    "mean": ("среднее", "mean"), "min": ("минимум", "min"), "max": ("максимум", "max"),
    "median": ("медиана", "median"), "std": ("СКО", "std"), "n": ("n", "n"),
    "n_with_hits": ("с результатами", "with hits"),
    # the quality gates of generated datasets (``dropped.<gate>``, ``thresholds.<gate>``)
    "generation": ("генерация", "generation"), "verbatim": ("дословность", "verbatim"),
    "well_formed": ("вопрос студента", "well-formed question"),
    "support": ("опора на чанк", "support"), "answerable": ("отвечаемость", "answerable"),
    "near_duplicate_new": ("почти дубликат в новом наборе", "near duplicate in the new set"),
    "near_duplicate_existing": ("почти дубликат в прежних наборах", "near duplicate of earlier sets"),
    "qa_fit": ("ответ отвечает на вопрос", "question–answer fit"),
    "qa_fit_offline": ("ответ отвечает на вопрос (офлайн)", "question–answer fit (offline)"),
    # the timed steps of the real-user analytics (``timings_s.<step>``)
    "read": ("чтение журнала", "reading the log"), "classify": ("классификация вопросов", "classifying questions"),
    "classify_answers": ("классификация ответов", "classifying answers"), "embed": ("эмбеддинги", "embeddings"),
    "retrieve": ("поиск", "retrieval"), "topics": ("темы", "topics"), "utilization": ("использование чанков", "chunk utilization"),
    "domain": ("анализ предметной области", "domain analysis"),
    # the kinds of vectors on Tier 0's joint map (``n_by_kind.<kind>``; ``chunk`` is a block label)
    "question": ("вопросы журнала", "logged questions"), "golden": ("эталонные вопросы", "golden questions"),
    "vector": ("загруженные векторы", "uploaded vectors"),
    "total": ("всего", "total"),  # ``cost_usd.total``
}


def _lookup(key: str) -> tuple[MetricSpec | None, list[str], str | None]:
    """``(entry, context segments before it, group member name)`` of a key."""
    segs = key.split(".")
    for i in range(len(segs)):
        if i and segs[i - 1] in GROUPS:  # what follows a group names its member (``n_by_kind.chunk``), not a metric
            break
        found = _resolve(".".join(segs[i:]))
        if found is not None:
            return found, segs[:i], None
    for j, seg in enumerate(segs[:-1]):
        if seg in GROUPS:
            return GROUPS[seg], segs[:j], ".".join(segs[j + 1:])
    return None, [], None


def get(key: str) -> MetricSpec | None:
    """The catalog entry of ``key`` (see the module doc for how dotted keys resolve), or ``None``."""
    return _lookup(key)[0]


def spec(key: str) -> MetricSpec:
    """Like :func:`get` but raises ``KeyError`` naming the key when it is not catalogued."""
    found = get(key)
    if found is None:
        raise KeyError(f"metric {key!r} is not in the metric catalog (voproshalych_eval/metrics/catalog.py)")
    return found


def is_catalogued(key: str) -> bool:
    return get(key) is not None


def uncatalogued(keys: Iterable[str]) -> list[str]:
    """The keys (sorted, unique) that have no catalog entry."""
    return sorted({k for k in keys if get(k) is None})


def direction(key: str) -> str:
    """``higher`` / ``lower`` / ``none`` from the catalog; ``none`` for an uncatalogued key (never guessed)."""
    found = get(key)
    return found.direction if found is not None else "none"


def scale_of(key: str) -> Scale | None:
    found = get(key)
    return found.scale if found is not None else None


def for_item_field(field_name: str) -> MetricSpec | None:
    """The entry whose per-item field is ``field_name`` (``answer_correctness`` -> ``avg_answer_correctness``);
    a dotted field (``metrics_chunk.mrr``) is looked up by its last segment; then the key itself."""
    bare = field_name.rsplit(".", 1)[-1]
    by_field = [e for e in _ENTRIES if e.item_field == bare and e.item_field not in ("score", "score_norm")]
    if by_field:
        return by_field[0]
    return ITEM_FIELDS.get(bare) or get(bare) or get(f"avg_{bare}")


def scale_of_item_field(field_name: str) -> Scale | None:
    found = for_item_field(field_name)
    return found.scale if found is not None else None


#: labels of the blocks and groups a dotted key can carry
BLOCK_LABELS: dict[str, tuple[str, str]] = {
    "chunk": ("чанки", "chunks"),
    "url": ("страницы", "pages"),
    "per_model": ("модель", "model"),
    "by_question_type": ("тип вопроса", "question type"),
    "accuracy_by_kind": ("вид элемента", "item kind"),
    "n_evaluated": ("в средних", "in the means"),
    "unanswerable_top_distance": ("вопросы без ответа", "unanswerable questions"),
    "hnsw": ("HNSW", "HNSW"),
    "with_context": ("с контекстом", "with context"),
    "without_context": ("без контекста", "without context"),
    "judge_calls": ("вызовы судей", "judge calls"),
}
#: synthetic question types (``generation.sampling.QUESTION_TYPES``), the groups of ``by_question_type`` keys
QUESTION_TYPE_LABELS: dict[str, tuple[str, str]] = {
    "factual": ("фактический", "factual"),
    "paraphrase": ("студенческий стиль", "student register"),
    "multi_chunk": ("из нескольких чанков", "multi-chunk"),
    "conditional": ("условие / сравнение", "conditional"),
    "unanswerable": ("нет ответа в базе", "unanswerable"),
    "follow_up": ("уточняющий вопрос", "follow-up"),
}
BLOCK_LABELS.update(QUESTION_TYPE_LABELS)


def label(key: str, lang: str = "ru") -> str:
    """Translated label of ``key``; a dotted key's blocks follow it (``MRR · чанки``, ``Время этапа embed``).

    An uncatalogued key is returned as it is (and fails the catalog test when a tier produces it)."""
    found, context, member = _lookup(key)
    if found is None:
        return key
    if member:
        pair = MEMBER_LABELS.get(member) or BLOCK_LABELS.get(member)  # a member may be a question type, a block
        member = (pair[1] if lang == "en" else pair[0]) if pair else member
    text = found.label(lang) + (f" {member}" if member else "")
    names: list[str] = []
    unknown: list[str] = []  # consecutive unknown segments are one name (a model id such as ``gpt-4.1``)
    for seg in [*context, None]:
        pair = BLOCK_LABELS.get(seg) if seg is not None else None
        if seg is not None and pair is None:
            unknown.append(seg)
            continue
        if unknown:
            names.append(".".join(unknown))
            unknown = []
        if pair is not None:
            names.append(pair[1] if lang == "en" else pair[0])
    return f"{text} · {' / '.join(names)}" if names else text


def default_baselines() -> list[tuple[str, str, float, float, str]]:
    """``(tier, metric, value, attention_margin, note)`` of every default baseline, in catalog order."""
    out = []
    for e in _ENTRIES:
        if e.baseline is None:
            continue
        for tier in e.baseline_tiers:
            out.append((tier, e.key, float(e.baseline), float(e.margin), e.note))
    return out


def facet(keys: Sequence[str]) -> dict[str, list[str]]:
    """Keys grouped by their scale (charts put one scale on one axis); uncatalogued keys under ``?``."""
    out: dict[str, list[str]] = {}
    for k in keys:
        s = scale_of(k)
        out.setdefault(s.key if s else "?", []).append(k)
    return out


@dataclass(frozen=True)
class Axis:
    """What a chart axis needs from the catalog: title and range."""

    title: str
    range: tuple[float, float] | None = field(default=None)


def axis(scale: Scale, lang: str = "ru", *, pad: float = 0.05) -> Axis:
    """Axis range of a bounded scale (padded), none for an open one."""
    if not scale.bounded:
        return Axis(scale.label(lang))
    span = scale.high - scale.low
    return Axis(scale.label(lang), (scale.low - (0 if scale.low == 0 else pad * span), scale.high + pad * span))

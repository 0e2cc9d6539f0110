"""Runs described in words, in Russian or English: the plan's title, the configuration, a run's option label.

One place for what a person reads about a run — the app's run pickers, the Runs page, the Overview and the
exported reports all use it, so a run is named the same way everywhere:

* :func:`config_words` — ``векторный поиск · e5-small · k = 10`` (retriever, models, the parameters that
  make a configuration; never ``{"retriever": "vector"}``);
* :func:`run_option` — ``векторный поиск · e5-small · demo_golden · 2026-05-01 12:30 · #12`` for pickers;
* :func:`param_rows` — every parameter as ``(label, value)`` for a definition list.

Model names, dataset names and free text are data and are shown as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from voproshalych_eval import parameters
from voproshalych_eval.metrics import catalog
from voproshalych_eval.plan_parameters import RUN
from voproshalych_eval.plans import PLANS, SPECS

#: labels of the run entries that are not a plan parameter (the roles of ``models``, a stored snapshot id …);
#: the parameters' labels come from the plans' parameter tables (``plan_parameters``)
OTHER_LABELS: dict[str, tuple[str, str]] = {
    "generator": ("генератор", "generator"), "judge": ("судья", "judge"), "judges": ("судьи", "judges"),
    "snapshot_id": ("снимок базы знаний", "knowledge-base snapshot"), "dim": ("размерность", "dimension"),
    "stored_model": ("модель векторов базы", "stored vectors' model"), "vectors": ("векторы", "vectors"),
    "n_neighbors": ("соседей", "neighbours"), "n_items": ("элементов", "items"), "bot_api": ("API бота", "bot API"),
    "run_aggregate": ("агрегатор прогонов", "run aggregator"), "strictness": ("прогонов", "runs"),
    "n_skipped_unanswerable": ("пропущено вопросов без ответа", "unanswerable questions skipped"),
    "context": ("контекст", "context"),
}
#: parameter name -> (ru, en) label
PARAM_LABELS: dict[str, tuple[str, str]] = {**parameters.labels([*(p.params for p in PLANS), RUN]),
                                              **OTHER_LABELS}

#: judge aggregators (``judges.AGGREGATORS``) in words
AGGREGATOR_LABELS: dict[str, tuple[str, str]] = {
    "average": ("среднее", "average"), "median": ("медиана", "median"),
    "majority_voting": ("большинство голосов", "majority vote"), "min": ("минимум", "minimum"),
    "max": ("максимум", "maximum"), "consensus": ("консенсус", "consensus"),
}

#: a judge quorum (``voproshalych_eval.judges.base.QUORUMS``) -> (ru, en)
QUORUM_LABELS = {"all": ("все", "all"), "majority": ("большинство", "majority"), "any": ("хотя бы один", "any")}

#: the model names of the offline substitutes (``llm/offline.py``) in words, wherever a model name is shown
OFFLINE_MODEL_LABELS: dict[str, tuple[str, str]] = {
    "offline-heuristic": ("офлайн-эвристика", "offline heuristic"),
    "extractive (offline heuristic)": ("извлекающий генератор (офлайн-эвристика)", "extractive generator (offline heuristic)"),
}

#: parameter value -> (ru, en) for the values that are words of ours, not data
VALUE_LABELS: dict[str, dict[str, tuple[str, str]]] = {
    "quorum": QUORUM_LABELS, "vote_quorum": QUORUM_LABELS,
    "judge_quorum": QUORUM_LABELS, "judge_vote_quorum": QUORUM_LABELS,
    "aggregate": AGGREGATOR_LABELS, "run_aggregate": AGGREGATOR_LABELS, "judge_aggregate": AGGREGATOR_LABELS,
    "retriever": {"vector": ("векторный поиск", "vector search"), "fts": ("полнотекстовый поиск", "full-text search"),
                  "hybrid": ("гибридный поиск", "hybrid search")},
    "mode": {"internal": ("внутренний конвейер", "internal pipeline"), "api": ("API бота", "bot API")},
    "generator": {"bot API": ("API бота", "bot API")},
    "context_from": {"page": ("страница", "page"), "retrieval": ("поиск", "retrieval"), "api": ("API", "API"),
                     "nearest": ("ближайшие чанки страницы", "the page's nearest chunks"), "none": ("нет", "none")},
    "source": {"chunks": ("чанки", "chunks"), "questions": ("вопросы журнала", "logged questions"),
               "both": ("чанки + вопросы", "chunks + questions"), "golden": ("золотой набор", "golden set"),
               "dialogs": ("набор диалогов", "dialog dataset"), "log": ("журнал вопросов", "question log")},
    "fts_config": {"russian": ("русский словарь PostgreSQL", "PostgreSQL Russian dictionary"),
                   "russian, plainto_tsquery with OR": ("русский словарь PostgreSQL, слова через ИЛИ",
                                                        "PostgreSQL Russian dictionary, words joined with OR")},
    "distance": {"cosine (pgvector <=>)": ("косинусное (pgvector <=>)", "cosine (pgvector <=>)"),
                 "1 / (1 + ts_rank)": ("1 / (1 + ts_rank)", "1 / (1 + ts_rank)")},
    "metric": {"cosine": ("косинусное расстояние", "cosine distance"),
               "euclidean": ("евклидово расстояние", "Euclidean distance")},
    "context": {"full reference context": ("полный эталонный контекст", "full reference context")},
    "dataset_kind": {"golden": ("эталонный", "golden"), "judge": ("набор для судьи", "judge set"),
                     "dialogs": ("диалоги", "dialogs")},
}

#: the parameters shown in a run's one-line description (``words`` in the plans' tables): a run of a known plan
#: lists them in its table's order, any other run in this order
CONFIG_ORDER = parameters.union((p.params for p in PLANS), parameters.words_order)

#: entries of a run's ``models`` that describe a model rather than name one (shown in the provenance only)
DETAIL_MODEL_KEYS = ("dim", "stored_model", "vectors")

_TITLES: dict[str, tuple[str, str]] = {}


def _pick(pair: tuple[str, str], lang: str) -> str:
    return pair[1] if lang == "en" else pair[0]


def tier_title(tier: str, lang: str = "ru") -> str:
    """The title of a plan (``Tier 1 · Поиск``) from the plan registry; the key for an unknown plan."""
    if not _TITLES:
        _TITLES.update({k: s.title for k, s in SPECS.items()})
    pair = _TITLES.get(tier)
    return _pick(pair, lang) if pair else tier


def param_label(name: str, lang: str = "ru") -> str:
    pair = PARAM_LABELS.get(name)
    return _pick(pair, lang) if pair else name.replace("_", " ")


def value_text(name: str, value: Any, lang: str = "ru") -> str:
    """A parameter's value in words: our own words translated, booleans as yes/no, metric keys by their
    catalog label, lists joined; anything else (model and dataset names, numbers) as it is."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return ("да", "yes")[lang == "en"] if value else ("нет", "no")[lang == "en"]
    words = VALUE_LABELS.get(name, {})
    if isinstance(value, str) and value in words:
        return _pick(words[value], lang)
    if isinstance(value, str) and value in OFFLINE_MODEL_LABELS:  # our offline substitutes, named in words
        return _pick(OFFLINE_MODEL_LABELS[value], lang)
    if name == "metric" and isinstance(value, str):
        spec = catalog.for_item_field(value) or catalog.get(value)
        if spec is not None:
            return spec.label(lang)
    if isinstance(value, list | tuple):
        return ", ".join(value_text(name, v, lang) for v in value) or "—"
    if isinstance(value, Mapping):
        return "; ".join(f"{param_label(str(k), lang)}: {value_text(str(k), v, lang)}" for k, v in value.items()) or "—"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _get(run: Any, name: str) -> Any:
    return getattr(run, name, None) if not isinstance(run, Mapping) else run.get(name)


def models_words(run: Any, lang: str = "ru") -> list[str]:
    """The model names of a run (embedder, generator, judges…), data as they are."""
    out: list[str] = []
    for _k, v in (_get(run, "models") or {}).items():
        if v in (None, "", [], {}) or isinstance(v, bool | Mapping):  # flags and specs (a bot API) are not names
            continue
        if _k in DETAIL_MODEL_KEYS:  # details of a model (its dimension, the stored vectors' label), not a name
            continue
        if isinstance(v, list | tuple):
            out.append("+".join(str(x) for x in v))
        elif isinstance(v, Mapping):
            out.append(", ".join(str(x) for x in v.values() if x))
        else:
            out.append(value_text(str(_k), v, lang))
    return list(dict.fromkeys(out))


def config_words(run: Any, lang: str = "ru") -> str:
    """The configuration of a run on one line: ``векторный поиск · e5-small · k = 10`` (offline marked)."""
    params = _get(run, "params") or {}
    plan = SPECS.get(str(_get(run, "tier")))
    parts: list[str] = []
    for name in parameters.words_order(plan.params) if plan is not None else CONFIG_ORDER:
        v = params.get(name)
        if v is None or v is False:
            continue
        if name in VALUE_LABELS and isinstance(v, str) and v in VALUE_LABELS[name]:
            parts.append(value_text(name, v, lang))
        elif name == "use_index":
            parts.append("HNSW")
        else:
            parts.append(f"{param_label(name, lang)} = {value_text(name, v, lang)}")
        if name == "retriever":  # the embedder right after the retriever
            parts += models_words(run, lang)
    if not params.get("retriever"):
        parts[0:0] = models_words(run, lang)
    if _get(run, "offline"):
        parts.append(("офлайн", "offline")[lang == "en"])
    return " · ".join(dict.fromkeys(p for p in parts if p)) or "—"


def when(value: Any) -> str:
    if isinstance(value, datetime):
        return f"{value:%Y-%m-%d %H:%M}"
    return str(value)[:16] if value else "—"


def run_option(run: Any, lang: str = "ru", *, with_tier: bool = False) -> str:
    """A run picker's label: configuration · dataset · start time · #id (newest first is the caller's order)."""
    bits = []
    if with_tier:
        bits.append(tier_title(str(_get(run, "tier")), lang))
    bits.append(config_words(run, lang))
    if _get(run, "dataset_name"):
        bits.append(str(_get(run, "dataset_name")))
    if _get(run, "label"):
        bits.append(str(_get(run, "label")))
    bits.append(when(_get(run, "started_at")))
    return " · ".join(bits) + f" · #{_get(run, 'id')}"


def param_rows(params: Mapping[str, Any] | None, lang: str = "ru") -> list[tuple[str, Any]]:
    """``(label, value)`` of every parameter, for a definition list; a nested specification (a bot API's
    request, a filter set) is technical text and comes as ``("code", "key: value; …")``."""
    rows: list[tuple[str, Any]] = []
    for k, v in (params or {}).items():
        if isinstance(v, Mapping):
            rows.append((param_label(str(k), lang), ("code", "; ".join(f"{a}: {b}" for a, b in v.items()) or "—")))
        else:
            rows.append((param_label(str(k), lang), value_text(str(k), v, lang)))
    return rows


def provenance_rows(run: Any, lang: str = "ru") -> list[tuple[str, Any]]:
    """A run's configuration and provenance as ``(label, value)`` rows for a definition list (instead of a
    JSON tree): tier, dataset (and its hash), configuration, models, every parameter, prompts, code
    version, who started it, when it started and finished."""
    def t(ru: str, en: str) -> str:
        return en if lang == "en" else ru

    rows: list[tuple[str, str]] = [
        (t("Уровень", "Tier"), tier_title(str(_get(run, "tier")), lang)),
        (t("Набор данных", "Dataset"), str(_get(run, "dataset_name") or "—")
         + (f" ({str(_get(run, 'dataset_hash'))[:12]})" if _get(run, "dataset_hash") else "")),
        (t("Конфигурация", "Configuration"), config_words(run, lang)),
    ]
    for role, model in (_get(run, "models") or {}).items():
        if model in (None, "", [], {}):
            continue
        shown = ("code", "; ".join(f"{a}: {b}" for a, b in model.items())) if isinstance(model, Mapping) else value_text(
            str(role), model, lang)
        rows.append((t("Модель", "Model") + f" ({param_label(str(role), lang)})", shown))
    rows += param_rows(_get(run, "params"), lang)
    for name, digest in (_get(run, "prompts") or {}).items():
        if isinstance(digest, Mapping):  # several prompts under one name (variants by input): technical text
            shown_digest: Any = ("code", "; ".join(f"{k}: {str(v)[:12]}" for k, v in digest.items()) or "—")
        else:
            shown_digest = str(digest)[:12] if digest else "—"
        rows.append((t("Промпт", "Prompt") + f" {name}", shown_digest))
    rows += [
        (t("Версия кода", "Code version"), str(_get(run, "code_version") or "—")),
        (t("Запустил", "Started by"), str(_get(run, "created_by") or "—")),
        (t("Начат", "Started"), when(_get(run, "started_at"))),
        (t("Завершён", "Finished"), when(_get(run, "finished_at"))),
    ]
    return rows

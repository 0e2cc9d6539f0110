"""Data behind the Overview page (and ``voproshalych-eval status``)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine

from voproshalych_eval.config import Settings
from voproshalych_eval.datasets.store import list_datasets
from voproshalych_eval.db.production import table_counts
from voproshalych_eval.engine import baselines as bl
from voproshalych_eval.engine.baselines import lookup_metric
from voproshalych_eval.engine.runs import Run, config_label, latest_run, list_runs
from voproshalych_eval.llm.providers import configured_providers
from voproshalych_eval.plans import overview_specs


def _metric_value(metrics: dict[str, Any], key: str) -> Any:
    """A metric from a run's stored aggregates (plain value or ``{"value": ...}``; level blocks searched,
    Tier 1's ``chunk`` level first)."""
    found = lookup_metric(metrics, key)
    return None if found is None else found.get("value")


def _trend(engine: Engine, tier: str, key: str, *, like: Run | None = None, last: int = 12) -> list[float]:
    """The last values of ``key`` over the tier's finished runs, oldest first (for a sparkline) — only the
    runs of ``like``'s configuration (:func:`~voproshalych_eval.engine.runs.config_label`): a trend never joins a
    vector and a full-text run."""
    values = []
    wanted = config_label(like) if like is not None else None
    for run in list_runs(engine, tier=tier, status="done", limit=200):
        if wanted is not None and config_label(run) != wanted:
            continue
        if len(values) >= last:
            break
        v = _metric_value(run.metrics or {}, key)
        if isinstance(v, int | float):
            values.append(float(v))
    return values[::-1]


def overview_snapshot(engine: Engine, settings: Settings) -> dict[str, Any]:
    counts = table_counts(engine)
    todo: list[dict[str, str]] = []
    if not counts.get("chunks"):
        todo.append({
            "ru": "База знаний пуста: выполните `voproshalych-eval demo` или укажите DATABASE_URL production-базы.",
            "en": "The knowledge base is empty: run `voproshalych-eval demo` or set DATABASE_URL to a production database.",
        })
    try:
        has_llm = bool(configured_providers(settings))
    except ImportError:
        has_llm = False
    if not has_llm:
        todo.append({
            "ru": "LLM не настроен: судьи и генератор работают как офлайн-эвристики (помечены). Задайте OPENAI_BASE_URL / OPENAI_API_KEY или провайдеров в .streamlit/secrets.toml.",
            "en": "No LLM configured: judges and the generator run as labelled offline heuristics. Set OPENAI_BASE_URL / OPENAI_API_KEY or providers in .streamlit/secrets.toml.",
        })
    table = bl.list_baselines(engine)
    tiers = []
    for info in overview_specs():
        run = latest_run(engine, info.key)
        values = {k: _metric_value(run.metrics, k) for k in info.key_metrics} if run else {}
        # offline substitutes are never compared to a baseline
        status = {k: bl.classify(v, bl.find_baseline(table, info.key, k)) for k, v in values.items()} if run and not run.offline else {}
        trend_key = next((k for k in info.key_metrics if values.get(k) is not None), None)
        baseline = bl.find_baseline(table, info.key, trend_key) if trend_key else None
        tiers.append({
            "key": info.key,
            "title": info.title,
            "page": info.page,
            "run": None if run is None else {"id": run.id, "finished_at": run.finished_at, "offline": run.offline,
                                             "mixed": run.mixed, "params": run.params, "models": run.models,
                                             "dataset_name": run.dataset_name, "label": run.label,
                                             "started_at": run.started_at},
            "values": values,
            "status": status,
            "baselines": {k: (b.value if (b := bl.find_baseline(table, info.key, k)) else None) for k in values},
            "run_status": bl.evaluate_run(table, info.key, run.status, run.metrics or {}, offline=bool(run.offline)).status if run else None,
            "trend": {"metric": trend_key, "values": _trend(engine, info.key, trend_key, like=run) if trend_key else [],
                      "baseline": baseline.value if baseline else None},
        })
    return {"counts": counts, "has_llm": has_llm, "n_datasets": len(list_datasets(engine)), "todo": todo, "tiers": tiers}

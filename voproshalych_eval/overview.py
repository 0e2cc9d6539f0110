"""Data behind the Overview page (and ``voproshalych-eval status``)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine

from voproshalych_eval.config import Settings
from voproshalych_eval.datasets import list_datasets
from voproshalych_eval.db.production import table_counts
from voproshalych_eval.runs import latest_run
from voproshalych_eval.tiers.catalog import TIERS


def _metric_value(metrics: dict[str, Any], key: str) -> Any:
    """A metric from a run's stored aggregates (plain value or ``{"value": ...}``; level blocks searched)."""
    candidates = [metrics]
    candidates += [v for v in metrics.values() if isinstance(v, dict) and "value" not in v]
    for block in candidates:
        if key in block:
            v = block[key]
            return v.get("value") if isinstance(v, dict) else v
    return None


def overview_snapshot(engine: Engine, settings: Settings) -> dict[str, Any]:
    counts = table_counts(engine)
    todo: list[dict[str, str]] = []
    if not counts.get("chunks"):
        todo.append({
            "ru": "База знаний пуста: выполните `voproshalych-eval demo` или укажите DATABASE_URL production-базы.",
            "en": "The knowledge base is empty: run `voproshalych-eval demo` or set DATABASE_URL to a production database.",
        })
    try:
        from voproshalych_eval.llm.providers import configured_providers

        has_llm = bool(configured_providers(settings))
    except ImportError:
        has_llm = False
    if not has_llm:
        todo.append({
            "ru": "LLM не настроен: судьи и генератор работают как офлайн-эвристики (помечены). Задайте OPENAI_BASE_URL / OPENAI_API_KEY или провайдеров в .streamlit/secrets.toml.",
            "en": "No LLM configured: judges and the generator run as labelled offline heuristics. Set OPENAI_BASE_URL / OPENAI_API_KEY or providers in .streamlit/secrets.toml.",
        })
    try:
        from voproshalych_eval.baselines import metric_status
    except ImportError:
        metric_status = None  # type: ignore[assignment]
    tiers = []
    for info in TIERS.values():
        run = latest_run(engine, info.key)
        values = {k: _metric_value(run.metrics, k) for k in info.key_metrics} if run else {}
        status = {}
        if run and metric_status is not None:
            status = {k: metric_status(engine, info.key, k, v) for k, v in values.items()}
        tiers.append({
            "key": info.key,
            "title": info.title,
            "run": None if run is None else {"id": run.id, "finished_at": run.finished_at, "offline": run.offline},
            "values": values,
            "status": status,
        })
    return {"counts": counts, "n_datasets": len(list_datasets(engine)), "todo": todo, "tiers": tiers}

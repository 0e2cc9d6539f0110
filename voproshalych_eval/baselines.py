"""Quality baselines: one table (``eval.baselines``) used by the Overview, the Runs page, reports and the CLI.

Each row is ``(tier, metric, value, scale, direction, attention_margin, note)``:

* ``scale`` — the metric's range as shown to users (``0–1``, ``1–5``, ``0–100``, ``0–2``, ``−1–1``,
  ``count``); a baseline outside its scale is refused;
* ``direction`` — ``higher`` or ``lower`` is better;
* ``attention_margin`` — the width of the "attention" band, in the metric's own units.

Status of one metric value ``v`` against baseline ``b`` with margin ``m`` (:func:`classify`):

* higher is better: ``v >= b`` → good; ``b - m <= v < b`` → attention; ``v < b - m`` → critical;
* lower is better:  ``v <= b`` → good; ``b < v <= b + m`` → attention; ``v > b + m`` → critical.

Overall status of a run (:func:`run_status`), the rule shown in the app:

1. only a finished (``done``) run is judged; any other run is *insufficient data*;
2. the run's metrics that have a baseline for its tier are looked up (a block such as Tier 1's
   ``chunk``/``url`` is searched too); a metric with fewer than :data:`MIN_N` valid items is skipped;
3. no metric left → *insufficient data*; any metric critical → *critical*; else any attention →
   *attention*; else *good*.

Defaults are seeded once (:func:`ensure_defaults`); after that the table belongs to the user: edits and
deletions made in the app are kept.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd
from sqlalchemy import Engine, text

STATUSES = ("good", "attention", "critical", "insufficient")
DIRECTIONS = ("higher", "lower")
#: scale label -> (low, high) used to validate baseline values
SCALES: dict[str, tuple[float, float]] = {
    "0–1": (0.0, 1.0),
    "1–5": (1.0, 5.0),
    "0–100": (0.0, 100.0),
    "0–2": (0.0, 2.0),
    "−1–1": (-1.0, 1.0),
    "count": (0.0, math.inf),
}
#: metrics computed over fewer valid items than this are not judged
MIN_N = 5
_SEEDED_KEY = "baselines_seeded"

RULE_RU = (
    "**Правило статуса.** Для метрики «больше — лучше»: значение ≥ базового уровня — 🟢 хорошо; ниже, но не "
    "более чем на запас внимания — 🟡 внимание; ещё ниже — 🔴 критично (для «меньше — лучше» наоборот). "
    "Запас задаётся в единицах метрики. Статус запуска: судим только завершённые запуски по метрикам, у "
    f"которых есть базовый уровень и не меньше {MIN_N} валидных элементов; нет таких метрик — "
    "⚪ недостаточно данных; хотя бы одна критичная — 🔴 критично; иначе хотя бы одна «внимание» — "
    "🟡 внимание; иначе 🟢 хорошо."
)
RULE_EN = (
    "**Status rule.** For a higher-is-better metric: a value ≥ the baseline is 🟢 good; below it but within "
    "the attention margin is 🟡 attention; further below is 🔴 critical (mirrored for lower-is-better). "
    "The margin is in the metric's own units. A run's status: only finished runs are judged, on their "
    f"metrics that have a baseline and at least {MIN_N} valid items; no such metric — ⚪ insufficient data; "
    "any critical — 🔴 critical; else any attention — 🟡 attention; else 🟢 good."
)

STATUS_ICONS = {"good": "🟢", "attention": "🟡", "critical": "🔴", "insufficient": "⚪"}
STATUS_LABELS = {
    "good": ("хорошо", "good"),
    "attention": ("внимание", "attention"),
    "critical": ("критично", "critical"),
    "insufficient": ("недостаточно данных", "insufficient data"),
}


class BaselineError(ValueError):
    """A baseline table that cannot be saved; the message is a sentence for the user."""


@dataclass(frozen=True)
class Baseline:
    tier: str
    metric: str
    value: float
    scale: str
    direction: str
    attention_margin: float
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _b(tier: str, metric: str, value: float, scale: str, direction: str, margin: float, note: str) -> Baseline:
    return Baseline(tier, metric, value, scale, direction, margin, note)


DEFAULT_BASELINES: tuple[Baseline, ...] = (
    _b("tier0", "effective_dimensionality", 20.0, "count", "higher", 5.0,
       "participation ratio of the spectrum; a collapse to few directions means anisotropic embeddings"),
    _b("tier0", "avg_nn_distance", 0.15, "0–2", "higher", 0.05,
       "cosine distance to the nearest neighbours; near 0 means near-duplicate chunks"),
    _b("tier1", "hit_rate@5", 0.80, "0–1", "higher", 0.05, "chunk level; URL level uses the same baseline"),
    _b("tier1", "mrr", 0.60, "0–1", "higher", 0.05, "chunk level; URL level uses the same baseline"),
    _b("tier1", "ndcg@10", 0.65, "0–1", "higher", 0.05, "chunk level; URL level uses the same baseline"),
    _b("tier1", "recall@10", 0.80, "0–1", "higher", 0.05, ""),
    _b("tier2", "avg_faithfulness", 0.80, "0–1", "higher", 0.05, "LLM judge"),
    _b("tier2", "avg_answer_relevance", 0.80, "0–1", "higher", 0.05, "LLM judge"),
    _b("tier2", "avg_answer_correctness", 4.0, "1–5", "higher", 0.3, "LLM judge, seed scale 1–5"),
    _b("tier2", "avg_rougeL_f", 0.30, "0–1", "higher", 0.05, "Unicode tokenizer"),
    _b("tier2", "avg_bleu", 20.0, "0–100", "higher", 5.0, "sacrebleu"),
    _b("tier3", "avg_e2e_score", 0.70, "0–1", "higher", 0.05, ""),
    _b("tier3", "pass_rate", 0.80, "0–1", "higher", 0.05, "PASS verdicts of the seed-003 judge"),
    _b("tier3", "avg_semantic_similarity", 0.75, "−1–1", "higher", 0.05, "cosine to the reference answer"),
    _b("tier3", "avg_euclidean_distance", 0.70, "0–2", "lower", 0.10, "unit vectors; lower is better"),
    _b("judge", "consistency_score", 0.90, "0–1", "higher", 0.05, "1 − normalised score std over repeats"),
    _b("judge", "error_rate", 0.02, "0–1", "lower", 0.03, "failed calls / all calls"),
    _b("judge_pipeline", "f1_score", 0.85, "0–1", "higher", 0.05, "show/no-show decision"),
    _b("judge_pipeline", "accuracy", 0.85, "0–1", "higher", 0.05, "show/no-show decision"),
    _b("ux", "cache_hit_rate", 0.80, "0–1", "higher", 0.10, "paraphrase pairs served from the cache"),
    _b("ux", "context_preservation", 0.80, "0–1", "higher", 0.05, ""),
    _b("real_users", "chunk_coverage", 0.50, "0–1", "higher", 0.10, "share of chunks retrieved at least once"),
)

COLUMNS = ["tier", "metric", "value", "scale", "direction", "attention_margin", "note"]


# --------------------------------------------------------------------------------------------- storage


def ensure_defaults(engine: Engine, *, force: bool = False) -> int:
    """Seed :data:`DEFAULT_BASELINES` once (or again with ``force``); returns rows inserted.

    Existing rows are never overwritten, and after the first seeding a user's deletions stay deleted.
    """
    with engine.begin() as conn:
        seeded = conn.execute(text("SELECT value FROM eval.meta WHERE key = :k"), {"k": _SEEDED_KEY}).scalar()
        if seeded and not force:
            return 0
        n = 0
        for b in DEFAULT_BASELINES:
            n += conn.execute(
                text(
                    "INSERT INTO eval.baselines(tier, metric, value, scale, direction, attention_margin, note) "
                    "VALUES (:tier, :metric, :value, :scale, :direction, :attention_margin, :note) "
                    "ON CONFLICT (tier, metric) DO NOTHING"
                ),
                b.to_dict(),
            ).rowcount
        conn.execute(
            text(
                "INSERT INTO eval.meta(key, value) VALUES (:k, CAST(:v AS jsonb)) "
                "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()"
            ),
            {"k": _SEEDED_KEY, "v": json.dumps(True)},
        )
    return n


def list_baselines(engine: Engine) -> list[Baseline]:
    ensure_defaults(engine)
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT tier, metric, value, scale, direction, attention_margin, note FROM eval.baselines "
                "ORDER BY tier, metric"
            )
        ).all()
    return [Baseline(*r) for r in rows]


def baselines_frame(engine: Engine) -> pd.DataFrame:
    """The table as a DataFrame with :data:`COLUMNS` (what the Baselines page edits)."""
    rows = [b.to_dict() for b in list_baselines(engine)]
    return pd.DataFrame(rows, columns=COLUMNS)


def _is_blank(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or (isinstance(v, str) and not v.strip())


def validate(frame: pd.DataFrame) -> list[Baseline]:
    """Check an edited table; returns the baselines or raises :class:`BaselineError` naming the row."""
    out: list[Baseline] = []
    seen: set[tuple[str, str]] = set()
    for i, row in enumerate(frame.to_dict("records"), start=1):
        if all(_is_blank(row.get(c)) for c in COLUMNS):
            continue  # an empty row added by the editor
        tier = str(row.get("tier") or "").strip()
        metric = str(row.get("metric") or "").strip()
        if not tier or not metric:
            raise BaselineError(f"Row {i}: tier and metric are required.")
        if (tier, metric) in seen:
            raise BaselineError(f"Row {i}: {tier}/{metric} appears twice; keep one row per metric.")
        seen.add((tier, metric))
        scale = str(row.get("scale") or "").strip()
        if scale not in SCALES:
            raise BaselineError(f"Row {i} ({metric}): scale must be one of {', '.join(SCALES)}.")
        direction = str(row.get("direction") or "").strip()
        if direction not in DIRECTIONS:
            raise BaselineError(f"Row {i} ({metric}): direction must be 'higher' or 'lower'.")
        try:
            value = float(row.get("value"))
            margin = 0.0 if _is_blank(row.get("attention_margin")) else float(row.get("attention_margin"))
        except (TypeError, ValueError) as exc:
            raise BaselineError(f"Row {i} ({metric}): value and margin must be numbers.") from exc
        if math.isnan(value):
            raise BaselineError(f"Row {i} ({metric}): the baseline value is empty.")
        lo, hi = SCALES[scale]
        if not lo <= value <= hi:
            raise BaselineError(f"Row {i} ({metric}): {value:g} is outside the scale {scale}.")
        if margin < 0 or math.isnan(margin):
            raise BaselineError(f"Row {i} ({metric}): the attention margin cannot be negative.")
        note = None if _is_blank(row.get("note")) else str(row.get("note"))
        out.append(Baseline(tier, metric, value, scale, direction, margin, note))
    return out


def save_baselines(engine: Engine, frame: pd.DataFrame) -> int:
    """Replace the whole table with the edited one (validated first); returns the number of rows."""
    rows = validate(frame)
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM eval.baselines"))
        for b in rows:
            conn.execute(
                text(
                    "INSERT INTO eval.baselines(tier, metric, value, scale, direction, attention_margin, note) "
                    "VALUES (:tier, :metric, :value, :scale, :direction, :attention_margin, :note)"
                ),
                b.to_dict(),
            )
        conn.execute(
            text(
                "INSERT INTO eval.meta(key, value) VALUES (:k, 'true'::jsonb) "
                "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()"
            ),
            {"k": _SEEDED_KEY},
        )
    return len(rows)


def set_baseline(engine: Engine, baseline: Baseline) -> None:
    """Insert or update one baseline (validated)."""
    (b,) = validate(pd.DataFrame([baseline.to_dict()]))
    ensure_defaults(engine)
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO eval.baselines(tier, metric, value, scale, direction, attention_margin, note) "
                "VALUES (:tier, :metric, :value, :scale, :direction, :attention_margin, :note) "
                "ON CONFLICT (tier, metric) DO UPDATE SET value = EXCLUDED.value, scale = EXCLUDED.scale, "
                "direction = EXCLUDED.direction, attention_margin = EXCLUDED.attention_margin, "
                "note = EXCLUDED.note, updated_at = now()"
            ),
            b.to_dict(),
        )


def reset_defaults(engine: Engine) -> int:
    """Restore the seeded defaults (overwriting edited rows of the same metric; other rows stay)."""
    with engine.begin() as conn:
        for b in DEFAULT_BASELINES:
            conn.execute(text("DELETE FROM eval.baselines WHERE tier = :t AND metric = :m"), {"t": b.tier, "m": b.metric})
    return ensure_defaults(engine, force=True)


# --------------------------------------------------------------------------------------------- lookup


def bare_metric(metric: str) -> str:
    """``chunk.mrr`` -> ``mrr`` (a level or group prefix removed)."""
    return metric.rsplit(".", 1)[-1]


def find_baseline(baselines: list[Baseline], tier: str, metric: str) -> Baseline | None:
    """The baseline of ``metric`` in ``tier``: the exact key first, then the key without its level prefix."""
    by_key = {(b.tier, b.metric): b for b in baselines}
    return by_key.get((tier, metric)) or by_key.get((tier, bare_metric(metric)))


def get_baseline(engine: Engine, tier: str, metric: str) -> Baseline | None:
    return find_baseline(list_baselines(engine), tier, metric)


_LOWER_WORDS = ("distance", "error", "latency", "failure", "_std", "std_", "time", "duration", "rank",
                "timing", "cost", "tokens")


def direction_of(metric: str, baseline: Baseline | None = None) -> str:
    """``higher`` or ``lower``: from the baseline when there is one, else from the metric's name."""
    if baseline is not None:
        return baseline.direction
    name = bare_metric(metric).lower()
    return "lower" if any(w in name for w in _LOWER_WORDS) else "higher"


def classify(value: float | None, baseline: Baseline | None) -> str | None:
    """``good`` / ``attention`` / ``critical`` for one value, or None without a value or a baseline."""
    if baseline is None or value is None:
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    if math.isnan(v):
        return None
    b, m = baseline.value, baseline.attention_margin
    if baseline.direction == "higher":
        return "good" if v >= b else ("attention" if v >= b - m else "critical")
    return "good" if v <= b else ("attention" if v <= b + m else "critical")


def metric_status(engine: Engine, tier: str, metric: str, value: Any) -> str | None:
    """Status of ``value`` of ``metric`` in ``tier``: ``good`` | ``attention`` | ``critical`` | None (no baseline)."""
    if isinstance(value, Mapping):
        value = value.get("value")
    if value is None or isinstance(value, bool):
        return None
    return classify(value, get_baseline(engine, tier, metric))


#: blocks searched first when a metric is looked up without its level (Tier 1: chunk level before URL level)
PREFERRED_BLOCKS = ("chunk", "url")


def lookup_metric(metrics: Mapping[str, Any], key: str) -> dict[str, Any] | None:
    """A metric of a run's stored aggregates as ``{"value", "n", ...}``: top level first, then one level down."""
    candidates: list[Mapping[str, Any]] = [metrics]
    blocks = sorted((k for k, v in metrics.items() if isinstance(v, Mapping) and "value" not in v),
                    key=lambda k: (k not in PREFERRED_BLOCKS, PREFERRED_BLOCKS.index(k) if k in PREFERRED_BLOCKS else 0, k))
    candidates += [metrics[k] for k in blocks]
    if "." in key:
        head, tail = key.split(".", 1)
        block = metrics.get(head)
        if isinstance(block, Mapping):
            candidates = [{tail: block.get(tail)}] if tail in block else []
            key = tail
    for block in candidates:
        if key in block:
            v = block[key]
            if isinstance(v, Mapping):
                return dict(v) if "value" in v else None
            if isinstance(v, bool) or not isinstance(v, int | float):
                return None
            return {"value": float(v)}
    return None


def _exact(metrics: Mapping[str, Any], key: str) -> dict[str, Any] | None:
    """``key`` (``mrr`` or ``chunk.mrr``) of a run's aggregates, without searching other blocks."""
    head, _, tail = key.partition(".")
    if tail:
        block = metrics.get(head)
        return _exact(block, tail) if isinstance(block, Mapping) and "value" not in block else None
    v = metrics.get(key)
    if isinstance(v, Mapping):
        return dict(v) if "value" in v else None
    if v is None or isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return {"value": float(v)}


@dataclass
class RunStatus:
    status: str
    metrics: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "metrics": self.metrics}


def evaluate_run(baselines: list[Baseline], tier: str, run_status_value: str, metrics: Mapping[str, Any]) -> RunStatus:
    """Pure core of :func:`run_status` (see the module docstring for the rule)."""
    rows: list[dict[str, Any]] = []
    blocks = [k for k, v in metrics.items() if isinstance(v, Mapping) and "value" not in v]
    for b in baselines:
        if b.tier != tier:
            continue
        keys = [b.metric] if "." in b.metric else [b.metric] + [f"{blk}.{b.metric}" for blk in blocks]
        for key in keys:
            found = _exact(metrics, key)
            if found is None or found.get("value") is None:
                continue
            n = found.get("n")
            skipped = n is not None and int(n) < MIN_N
            rows.append({
                "metric": key, "value": found["value"], "n": n, "baseline": b.value, "scale": b.scale,
                "direction": b.direction, "attention_margin": b.attention_margin,
                "status": "insufficient" if skipped else classify(found["value"], b),
            })
    if run_status_value != "done":
        return RunStatus("insufficient", rows)
    judged = [r["status"] for r in rows if r["status"] in ("good", "attention", "critical")]
    if not judged:
        overall = "insufficient"
    elif "critical" in judged:
        overall = "critical"
    elif "attention" in judged:
        overall = "attention"
    else:
        overall = "good"
    return RunStatus(overall, rows)


def run_status(engine: Engine, run: Any) -> RunStatus:
    """Overall status of a run (a :class:`voproshalych_eval.runs.Run`) against the baselines."""
    return evaluate_run(list_baselines(engine), run.tier, run.status, run.metrics or {})


"""Quality baselines: one table (``eval.baselines``) used by the Overview, the Runs page, reports and the CLI.

Each row is ``(tier, metric, value, attention_margin, note)``. A metric's **scale** and **direction**
are not stored here: they come from the metric catalog (:mod:`voproshalych_eval.metrics.catalog`), the
one place they are written. A baseline for a metric the catalog does not know, for an informational
metric (direction ``none``) or outside the metric's scale is refused when saved; a stored one is skipped
when loaded and named (:func:`load_baselines`, :func:`problems`), never breaking a page.

* ``attention_margin`` — the width of the "attention" band, in the metric's own units.

Status of one metric value ``v`` against baseline ``b`` with margin ``m`` (:func:`classify`):

* higher is better: ``v >= b`` → good; ``b - m <= v < b`` → attention; ``v < b - m`` → critical;
* lower is better:  ``v <= b`` → good; ``b < v <= b + m`` → attention; ``v > b + m`` → critical.

Overall status of a run (:func:`run_status`), the rule shown in the app:

1. only a finished (``done``) run is judged; any other run is *insufficient data*;
2. a run produced by offline substitutes is never judged: its status is *offline — not compared*
   (:data:`OFFLINE`), shown with its own badge everywhere a verdict would be;
3. the run's metrics that have a baseline for its tier are looked up (a block such as Tier 1's
   ``chunk``/``url`` is searched too); a metric with fewer than :data:`MIN_N` valid items is skipped;
4. no metric left → *insufficient data*; any metric critical → *critical*; else any attention →
   *attention*; else *good*.

Defaults (the catalog's default baselines) are seeded once (:func:`ensure_defaults`); after that the
table belongs to the user: edits and deletions made in the app are kept.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd
from sqlalchemy import Engine, text

from voproshalych_eval.db import meta
from voproshalych_eval.errors import VoproshalychEvalError
from voproshalych_eval.metrics import catalog

log = logging.getLogger(__name__)

STATUSES = ("good", "attention", "critical", "insufficient", "offline")
#: the status of a run made by offline substitutes: never compared to a baseline
OFFLINE = "offline"
#: metrics computed over fewer valid items than this are not judged
MIN_N = 5
_SEEDED_KEY = "baselines_seeded"

RULE_RU = (
    "**Правило статуса.** Для метрики «больше — лучше»: значение ≥ базового уровня — 🟢 хорошо; ниже, но не "
    "более чем на запас внимания — 🟡 внимание; ещё ниже — 🔴 критично (для «меньше — лучше» наоборот). "
    "Запас задаётся в единицах метрики; шкала и направление каждой метрики — из каталога метрик. Статус "
    f"запуска: судим только завершённые запуски по метрикам, у которых есть базовый уровень и не меньше {MIN_N} "
    "валидных элементов; нет таких метрик — ⚪ недостаточно данных; хотя бы одна критичная — 🔴 критично; "
    "иначе хотя бы одна «внимание» — 🟡 внимание; иначе 🟢 хорошо. Запуск офлайн-заменителей (эвристический "
    "судья, извлекающий генератор) с базовыми уровнями не сравнивается: 📴 офлайн — не сравнивается. Ворота "
    "выкладки (Tier 3) входят в тот же вердикт: FAIL — 🔴 критично. Запуск, у которого сбоем закончились все "
    "элементы или все оценки, — ⛔ сбой, а не «недостаточно данных»."
)
RULE_EN = (
    "**Status rule.** For a higher-is-better metric: a value ≥ the baseline is 🟢 good; below it but within "
    "the attention margin is 🟡 attention; further below is 🔴 critical (mirrored for lower-is-better). "
    "The margin is in the metric's own units; each metric's scale and direction come from the metric catalog. "
    f"A run's status: only finished runs are judged, on their metrics that have a baseline and at least {MIN_N} "
    "valid items; no such metric — ⚪ insufficient data; any critical — 🔴 critical; else any attention — "
    "🟡 attention; else 🟢 good. A run made by offline substitutes (heuristic judge, extractive generator) is "
    "never compared to the baselines: 📴 offline — not compared. A deployment gate (Tier 3) is part of the same "
    "verdict: FAIL is 🔴 critical. A run whose every item or every judgement failed is ⛔ failed, not "
    "\"insufficient data\"."
)

STATUS_ICONS = {"good": "🟢", "attention": "🟡", "critical": "🔴", "insufficient": "⚪", "offline": "📴", "failed": "⛔"}
STATUS_LABELS = {
    "good": ("хорошо", "good"),
    "attention": ("внимание", "attention"),
    "critical": ("критично", "critical"),
    "insufficient": ("недостаточно данных", "insufficient data"),
    "offline": ("офлайн — не сравнивается", "offline — not compared"),
    "failed": ("сбой — оценок нет", "failed — nothing was judged"),
}
#: a run whose every item (or every judgement) failed: a failure, never "insufficient data"
FAILED = "failed"
FAILED_REASON = "every item or every judgement failed: the run measured nothing"


class BaselineError(VoproshalychEvalError, ValueError):
    """A baseline table that cannot be saved or used; the message is a sentence for the user."""


@dataclass(frozen=True)
class Baseline:
    """One row of the table; :attr:`scale` and :attr:`direction` are read from the metric catalog."""

    tier: str
    metric: str
    value: float
    attention_margin: float
    note: str | None = None

    @property
    def spec(self) -> catalog.MetricSpec:
        return catalog.spec(self.metric)

    @property
    def scale(self) -> str:
        return self.spec.scale.key

    @property
    def direction(self) -> str:
        return self.spec.direction

    def to_dict(self) -> dict[str, Any]:
        """The stored fields plus the catalog's ``scale`` and ``direction`` (for display)."""
        return {**asdict(self), "scale": self.scale, "direction": self.direction}

    def row(self) -> dict[str, Any]:
        """The stored fields only."""
        return asdict(self)


DEFAULT_BASELINES: tuple[Baseline, ...] = tuple(
    Baseline(tier, metric, value, margin, note or None) for tier, metric, value, margin, note in catalog.default_baselines()
)

#: what the Baselines page shows: the stored fields and, read only, the catalog's scale and direction
COLUMNS = ["tier", "metric", "value", "scale", "direction", "attention_margin", "note"]
_STORED = ("tier", "metric", "value", "attention_margin", "note")


def check(baseline: Baseline, where: str = "") -> Baseline:
    """The baseline if the catalog accepts it, else :class:`BaselineError` (``where`` starts the message)."""
    head = f"{where} ({baseline.metric})" if where else baseline.metric
    spec = catalog.get(baseline.metric)
    if spec is None:
        raise BaselineError(f"{head}: the metric is not in the metric catalog; baselines need a catalogued metric.")
    if spec.direction == "none":
        raise BaselineError(f"{head}: the metric is informational (no better direction); it takes no baseline.")
    if math.isnan(baseline.value):
        raise BaselineError(f"{head}: the baseline value is empty.")
    if not spec.scale.contains(baseline.value):
        raise BaselineError(f"{head}: {baseline.value:g} is outside the scale {spec.scale.key}.")
    if baseline.attention_margin < 0 or math.isnan(baseline.attention_margin):
        raise BaselineError(f"{head}: the attention margin cannot be negative.")
    return baseline


# --------------------------------------------------------------------------------------------- storage


def ensure_defaults(engine: Engine, *, force: bool = False) -> int:
    """Seed :data:`DEFAULT_BASELINES` once (or again with ``force``); returns rows inserted.

    Existing rows are never overwritten, and after the first seeding a user's deletions stay deleted.
    """
    with engine.begin() as conn:
        seeded = meta.get_meta(conn, _SEEDED_KEY)
        if seeded and not force:
            return 0
        n = 0
        for b in DEFAULT_BASELINES:
            n += conn.execute(
                text(
                    "INSERT INTO eval.baselines(tier, metric, value, attention_margin, note) "
                    "VALUES (:tier, :metric, :value, :attention_margin, :note) "
                    "ON CONFLICT (tier, metric) DO NOTHING"
                ),
                b.row(),
            ).rowcount
        meta.set_meta(conn, _SEEDED_KEY, True)
    return n


def _stored(engine: Engine) -> list[Baseline]:
    ensure_defaults(engine)
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT tier, metric, value, attention_margin, note FROM eval.baselines ORDER BY tier, metric")
        ).all()
    return [Baseline(*r) for r in rows]


def load_baselines(engine: Engine) -> tuple[list[Baseline], list[str]]:
    """``(usable baselines, problems)``: every stored row checked against the catalog; a bad row (an
    uncatalogued or informational metric, a value outside the scale — e.g. a catalog change after it was
    saved) is left out and named in ``problems``, one sentence each, so no page breaks on it."""
    good: list[Baseline] = []
    problems: list[str] = []
    for b in _stored(engine):
        try:
            good.append(check(b, f"Baseline {b.tier}/{b.metric}"))
        except BaselineError as exc:
            problems.append(f"{exc} It is skipped; fix or delete it on the Baselines page.")
    return good, problems


def list_baselines(engine: Engine) -> list[Baseline]:
    """The usable stored baselines (:func:`load_baselines`); a bad row is skipped and logged by name."""
    good, problems = load_baselines(engine)
    for problem in problems:
        log.warning("%s", problem)
    return good


def problems(engine: Engine) -> list[str]:
    """The stored rows :func:`list_baselines` skips, one sentence each naming the row (for the Baselines page)."""
    return load_baselines(engine)[1]


def baselines_frame(engine: Engine) -> pd.DataFrame:
    """The table as a DataFrame with :data:`COLUMNS` (what the Baselines page edits; rows are not checked,
    so a bad row can be fixed there). ``scale``/``direction`` are the catalog's, ``?`` when it lacks the metric."""
    rows = []
    for b in _stored(engine):
        spec = catalog.get(b.metric)
        rows.append({**b.row(), "scale": spec.scale.key if spec else "?", "direction": spec.direction if spec else "?"})
    return pd.DataFrame(rows, columns=COLUMNS)


def _is_blank(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or (isinstance(v, str) and not v.strip())


def validate(frame: pd.DataFrame) -> list[Baseline]:
    """Check an edited table; returns the baselines or raises :class:`BaselineError` naming the row.

    ``scale`` and ``direction`` columns, if present, are ignored: they are the catalog's."""
    out: list[Baseline] = []
    seen: set[tuple[str, str]] = set()
    for i, row in enumerate(frame.to_dict("records"), start=1):
        if all(_is_blank(row.get(c)) for c in _STORED):
            continue  # an empty row added by the editor
        tier = str(row.get("tier") or "").strip()
        metric = str(row.get("metric") or "").strip()
        if not tier or not metric:
            raise BaselineError(f"Row {i}: tier and metric are required.")
        if (tier, metric) in seen:
            raise BaselineError(f"Row {i}: {tier}/{metric} appears twice; keep one row per metric.")
        seen.add((tier, metric))
        try:
            value = float(row.get("value"))
            margin = 0.0 if _is_blank(row.get("attention_margin")) else float(row.get("attention_margin"))
        except (TypeError, ValueError) as exc:
            raise BaselineError(f"Row {i} ({metric}): value and margin must be numbers.") from exc
        note = None if _is_blank(row.get("note")) else str(row.get("note"))
        out.append(check(Baseline(tier, metric, value, margin, note), f"Row {i}"))
    return out


def save_baselines(engine: Engine, frame: pd.DataFrame) -> int:
    """Replace the whole table with the edited one (validated first); returns the number of rows."""
    rows = validate(frame)
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM eval.baselines"))
        for b in rows:
            conn.execute(
                text(
                    "INSERT INTO eval.baselines(tier, metric, value, attention_margin, note) "
                    "VALUES (:tier, :metric, :value, :attention_margin, :note)"
                ),
                b.row(),
            )
        meta.set_meta(conn, _SEEDED_KEY, True)
    return len(rows)


def set_baseline(engine: Engine, baseline: Baseline) -> None:
    """Insert or update one baseline (validated)."""
    b = check(baseline)
    ensure_defaults(engine)
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO eval.baselines(tier, metric, value, attention_margin, note) "
                "VALUES (:tier, :metric, :value, :attention_margin, :note) "
                "ON CONFLICT (tier, metric) DO UPDATE SET value = EXCLUDED.value, "
                "attention_margin = EXCLUDED.attention_margin, note = EXCLUDED.note, updated_at = now()"
            ),
            b.row(),
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


def classify(value: float | None, baseline: Baseline | None) -> str | None:
    """``good`` / ``attention`` / ``critical`` for one value, or None without a value or a baseline."""
    if baseline is None or value is None:
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    if math.isnan(v) or baseline.direction not in ("higher", "lower"):  # an informational metric: no verdict
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
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "metrics": self.metrics, "reason": self.reason}


#: why an offline run is never judged (its numbers come from heuristic substitutes, not an LLM)
OFFLINE_REASON = "offline substitutes (heuristic judge / extractive generator): never compared to a baseline"


def evaluate_run(baselines: list[Baseline], tier: str, run_status_value: str, metrics: Mapping[str, Any], *,
                 offline: bool = False) -> RunStatus:
    """Pure core of :func:`run_status` (see the module docstring for the rule). An ``offline`` run is never
    compared to a baseline: every row's status is ``None`` and the run's status is :data:`OFFLINE`."""
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
                "metric": key, "label_ru": catalog.label(key, "ru"), "label_en": catalog.label(key, "en"),
                "value": found["value"], "n": n, "baseline": b.value, "scale": b.scale,
                "direction": b.direction, "attention_margin": b.attention_margin,
                "status": "insufficient" if skipped else classify(found["value"], b),
            })
    if metrics.get("gate_passed") is not None:  # the deployment gate is part of the run's one verdict
        rows.append(_gate_row(metrics))
    if offline:
        for r in rows:
            r["status"] = None
        return RunStatus(OFFLINE, rows, OFFLINE_REASON)
    if run_status_value == "failed" or (run_status_value in ("done", "done_with_failures") and _all_failed(metrics)):
        return RunStatus(FAILED, rows, FAILED_REASON)
    if run_status_value not in ("done", "done_with_failures"):
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


def _gate_row(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The deployment gate as a row of the verdict: passing share of ALL items against the gate's threshold,
    🟢 on PASS, 🔴 on FAIL (a gate has no attention band)."""
    value = metrics.get("gate_pass_rate")
    value = value.get("value") if isinstance(value, Mapping) else value
    return {
        "metric": "gate_pass_rate", "label_ru": "Ворота выкладки: доля прошедших из всех вопросов",
        "label_en": "Deployment gate: passing share of all questions", "value": value,
        "n": metrics.get("n_items"), "baseline": metrics.get("min_pass_rate"), "scale": "0–1", "direction": "higher",
        "attention_margin": 0.0, "status": "good" if metrics.get("gate_passed") else "critical", "gate": True,
    }


def _all_failed(metrics: Mapping[str, Any]) -> bool:
    """Whether every judged aggregate of a finished run failed on every item (``n == 0`` with failures): a run
    that judged nothing has failed, it does not lack data."""
    judged = [v for v in metrics.values() if isinstance(v, Mapping) and "value" in v and "n_failed" in v]
    return bool(judged) and all(v.get("value") is None and not v.get("n") and (v.get("n_failed") or 0) > 0
                                for v in judged)


def run_status(engine: Engine, run: Any) -> RunStatus:
    """Overall status of a run (a :class:`voproshalych_eval.engine.runs.Run`) against the baselines."""
    return evaluate_run(list_baselines(engine), run.tier, run.status, run.metrics or {}, offline=bool(run.offline))


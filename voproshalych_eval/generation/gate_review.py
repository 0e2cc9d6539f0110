"""The dataset gates against the reviewers: what a generation run kept that people later rejected, and how far
each gate is from the people's accept/reject decisions.

A generation run stores its kept items as one version of a dataset (``dataset_ref`` in its report); the
Dataset review page records an accept or reject per item key of that dataset name (``eval.dataset_reviews``,
the same decisions ``labels import --review`` copies into the label store as ``dataset_review`` labels).
Everything here is computed from the store:

* :func:`run_review` — per generation run: ``n_kept`` (items of the version it stored), ``n_reviewed``,
  ``n_accepted``, ``n_rejected``, ``rejected_share = n_rejected / n_kept`` (unreviewed items count as not
  rejected, so it grows as review proceeds) and ``rejected_share_reviewed = n_rejected / n_reviewed`` with its
  Wilson 95% CI. A review is matched by item key; a rejected item whose stored question differs from what the
  run kept (a later generation under the same name) is not counted.
* :func:`gate_agreement` — each gate's verdicts on the reviewed items against the decisions (accept 1 / reject
  0), through the judges' agreement machinery (:func:`voproshalych_eval.judges.agreement.agreement`: Cohen's
  kappa with a bootstrap CI, bias = mean(gate − people), confusion). A kept item passed every gate, so at the
  run's thresholds the gates say "pass" on all of them and the confusion's first row counts the items the gate
  let through that people rejected. The gates with a threshold on a recorded value (verbatim, support,
  qa_fit) are **aligned** like a judge: the threshold maximising kappa with the decisions
  (:func:`voproshalych_eval.metrics.agreement.best_threshold`) is chosen on the training folds of a k-fold split
  and applied to the held-out fold only, so the ``held_out`` agreement comes from items the calibration never
  saw; ``difference`` is the paired bootstrap difference (held-out calibrated − run's threshold) and
  ``adopt`` is true only when its CI lies above zero. ``calibrated`` is the threshold from all reviewed items.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine

from voproshalych_eval.datasets.store import get_dataset
from voproshalych_eval.generation import gates as G
from voproshalych_eval.judges.agreement import LabelledItem, agreement
from voproshalych_eval.judges.alignment import make_folds
from voproshalych_eval.metrics import agreement as am
from voproshalych_eval.metrics.statistics import proportion_ci

__all__ = ["GATE_ORDER", "ReviewedItem", "gate_agreement", "review_shares", "run_review", "share_of_rejected"]

#: the per-item gates whose verdict is recorded on a kept item
GATE_ORDER = ("well_formed", "verbatim", "support", "qa_fit", "answerable")
TIER = "dataset_generation"


@dataclass
class ReviewedItem:
    """One kept item of a generation run with the reviewer's decision (1 accepted / 0 rejected)."""

    key: str
    decision: float
    question: str
    question_type: str
    gates: dict[str, Any] = field(default_factory=dict)
    reason: str | None = None


def share_of_rejected(n_kept: int, n_reviewed: int, n_rejected: int) -> dict[str, Any]:
    """``rejected_share = n_rejected / n_kept`` and ``rejected_share_reviewed = n_rejected / n_reviewed`` (None
    for a zero denominator), with the Wilson 95% CI of the latter (``ci``). Example: 10 kept, 8 reviewed, 2
    rejected -> 0.2 and 0.25."""
    if not 0 <= n_rejected <= n_reviewed <= n_kept:
        raise ValueError(f"need 0 <= rejected ({n_rejected}) <= reviewed ({n_reviewed}) <= kept ({n_kept})")
    lo, hi = proportion_ci(n_rejected, n_reviewed) if n_reviewed else (None, None)
    return {"n_kept": n_kept, "n_reviewed": n_reviewed, "n_accepted": n_reviewed - n_rejected,
            "n_rejected": n_rejected, "rejected_share": n_rejected / n_kept if n_kept else None,
            "rejected_share_reviewed": n_rejected / n_reviewed if n_reviewed else None,
            "ci": None if lo is None else [lo, hi]}


def _kept_results(records: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    out = {}
    for rec in records:
        res = rec.get("result") or {}
        if rec.get("status") == "done" and res.get("kept"):
            out["syn_" + str((res.get("slot") or {}).get("key") or rec["item_key"])] = res
    return out


def run_review(engine: Engine, run: Any, records: Sequence[Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """The review outcome of generation ``run`` (a :class:`voproshalych_eval.engine.runs.Run`; ``records``: its item
    records, ``runs.item_records`` — the gates' recorded values; without them the gates are not read), see the
    module doc: :func:`share_of_rejected`'s keys plus ``run_id``, ``dataset``, ``dataset_ref``, ``thresholds`` and
    ``items`` (:class:`ReviewedItem` of every reviewed kept item). A run that stored nothing has ``n_kept = 0``."""
    from voproshalych_eval.datasets import annotations  # heavy: defers pandas (via annotations)
    if run is None or run.tier != TIER:
        raise LookupError(f"run {getattr(run, 'id', run)} is not a dataset generation run")
    m = run.metrics or {}
    base = {"run_id": run.id, "dataset": m.get("dataset"), "dataset_ref": m.get("dataset_ref"),
            "thresholds": {**G.DEFAULT_THRESHOLDS, **dict(m.get("thresholds") or {})}, "started_at": run.started_at}
    if not m.get("dataset_ref"):
        return {**base, **share_of_rejected(0, 0, 0), "items": []}
    try:
        ds = get_dataset(engine, m["dataset_ref"], "golden")
    except LookupError:  # the stored version was deleted since: nothing left to compare with the reviews
        return {**base, **share_of_rejected(0, 0, 0), "items": [], "missing": True}
    keys = ds.keys()
    results = _kept_results(records or [])
    revs = annotations.reviews(engine, ds.name, ds.kind)
    items: list[ReviewedItem] = []
    for key, rec in zip(keys, ds.records, strict=True):
        rev = revs.get(key)
        if rev is None or rev.status not in ("accepted", "rejected"):
            continue
        if rev.status == "rejected" and rev.item and rev.item.get("question") not in (None, rec.get("question")):
            continue  # the review is of another item that had this key (a later generation under the same name)
        res = results.get(key) or {}
        items.append(ReviewedItem(key, 1.0 if rev.status == "accepted" else 0.0,
                                  str(res.get("question") or rec.get("question") or ""),
                                  str(rec.get("question_type") or res.get("question_type") or ""),
                                  dict(res.get("gates") or {}), rev.reason))
    n_rej = sum(1 for it in items if it.decision == 0.0)
    return {**base, **share_of_rejected(len(keys), len(items), n_rej), "items": items}


def review_shares(engine: Engine, generation_runs: Sequence[Any]) -> list[dict[str, Any]]:
    """:func:`run_review` (without ``items``) of each of ``generation_runs`` that stored a dataset."""
    out = []
    for run in generation_runs:
        if run.tier != TIER or not (run.metrics or {}).get("dataset_ref"):
            continue
        rep = run_review(engine, run)
        rep.pop("items")
        out.append(rep)
    return out


def _verdict(gate: str, it: ReviewedItem, thresholds: dict[str, Any]) -> tuple[float | None, float | None]:
    """(the gate's verdict 1 pass / 0 drop, its recorded value) on a kept item; (None, None) when it did not apply."""
    if gate == "well_formed":
        ok, _ = G.well_formed_question(G.strip_preamble(it.question))
        return (1.0 if ok else 0.0), None
    rec = it.gates.get(gate)
    if not isinstance(rec, dict):
        return None, None
    if gate in G.THRESHOLD_GATES:
        if rec.get("value") is None:
            return (1.0 if rec.get("passed") else 0.0), None
        thr = rec.get("threshold", thresholds.get(gate))
        value = float(rec["value"])
        return (1.0 if G.gate_passes(gate, value, float(thr)) else 0.0), value
    return (1.0 if rec.get("passed") else 0.0), None


def gate_agreement(items: Sequence[ReviewedItem], *, thresholds: dict[str, Any] | None = None, folds: int = 5,
                   n_resamples: int = 1000, seed: int = 0) -> dict[str, dict[str, Any]]:
    """Per gate of :data:`GATE_ORDER` that applied to at least one reviewed item: ``n``, ``kappa``, ``bias``,
    ``confusion`` at the run's thresholds and, for threshold gates with enough items (at least ``folds`` and
    both decisions present), ``calibration``: ``threshold`` (the run's), ``calibrated`` (from all items),
    ``folds`` (held-out keys and the threshold chosen without them), ``held_out`` (agreement of the calibrated
    verdicts on held-out items), ``difference`` and ``adopt`` (see the module doc)."""
    thr_all = {**G.DEFAULT_THRESHOLDS, **dict(thresholds or {})}
    out: dict[str, dict[str, Any]] = {}
    for gate in GATE_ORDER:
        rows = [(it, *_verdict(gate, it, thr_all)) for it in items]
        rows = [r for r in rows if r[1] is not None]
        if not rows:
            continue
        humans = [r[0].decision for r in rows]
        judged = [r[1] for r in rows]
        rep = agreement(humans, judged, kind="binary", n_resamples=n_resamples, seed=seed)
        gate_rep: dict[str, Any] = {k: rep.get(k) for k in ("n", "kappa", "bias", "confusion", "poor")}
        values = [r[2] for r in rows]
        side = G.THRESHOLD_GATES.get(gate)
        if side and all(v is not None for v in values) and len(rows) >= folds and len(set(humans)) == 2:
            gate_rep["calibration"] = _calibrate(gate, rows, side, float(thr_all[gate]), folds=folds,
                                                 n_resamples=n_resamples, seed=seed)
        out[gate] = gate_rep
    return out


def _calibrate(gate: str, rows: list[tuple[ReviewedItem, float | None, float | None]], side: str, current: float, *,
               folds: int, n_resamples: int, seed: int) -> dict[str, Any]:
    humans = [r[0].decision for r in rows]
    values = [float(r[2]) for r in rows]  # type: ignore[arg-type]
    before = [float(r[1]) for r in rows]  # type: ignore[arg-type]
    index = {r[0].key: i for i, r in enumerate(rows)}
    fold_keys = make_folds([LabelledItem(r[0].key, r[0].question, None, [], None, values={"reviewer": r[0].decision})
                            for r in rows], folds, kind="binary", seed=seed)
    after: list[float | None] = [None] * len(rows)
    info = []
    for f, held in enumerate(fold_keys):
        held_idx = {index[k] for k in held}
        train = [i for i in range(len(rows)) if i not in held_idx]
        cut, _ = am.best_threshold([humans[i] for i in train], [values[i] for i in train], side=side)
        t = current if cut is None else cut
        for i in held_idx:
            after[i] = 1.0 if G.gate_passes(gate, values[i], t) else 0.0
        info.append({"fold": f + 1, "held_out": list(held), "threshold": t, "calibrated": cut is not None})
    cal, cal_kappa = am.best_threshold(humans, values, side=side)
    rep_after = agreement(humans, after, kind="binary", n_resamples=n_resamples, seed=seed)
    diff = am.paired_difference_ci(humans, before, after, statistic="kappa", n_resamples=n_resamples, seed=seed)
    return {"threshold": current, "side": side, "calibrated": cal, "calibrated_kappa_in_sample": cal_kappa,
            "folds": info, "held_out": {k: rep_after.get(k) for k in ("n", "kappa", "bias", "confusion")},
            "difference": diff, "adopt": bool(diff["significant"] and (diff["delta"] or 0) > 0)}

"""Text overlap of one answer with its reference (ROUGE-1/2/L F, BLEU, chrF) as a tier item stores it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from voproshalych_eval.metrics.text_overlap import bleu, chrf, rouge_scores

OVERLAP_KEYS = ("rouge1_f", "rouge2_f", "rougeL_f", "bleu", "chrf")


def overlap_scores(prediction: str | None, reference: str | None, *, stem: bool = False) -> dict[str, float | None]:
    """ROUGE-1/2/L F, BLEU (0-100) and chrF (0-100) of one answer against its reference.

    No reference (or no answer at all) -> ``None`` (not applicable); an EMPTY answer -> 0.0 on every
    metric: it is the bad answer it is, never left out of the means."""
    keys = OVERLAP_KEYS
    if prediction is None or not (reference or "").strip():
        return dict.fromkeys(keys)
    if not prediction.strip():
        return dict.fromkeys(keys, 0.0)

    r = rouge_scores(prediction, reference, stem=stem)
    return {
        "rouge1_f": _rouge_f(r, "rouge1"),
        "rouge2_f": _rouge_f(r, "rouge2"),
        "rougeL_f": _rouge_f(r, "rougeL"),
        "bleu": float(bleu(prediction, reference)),
        "chrf": float(chrf(prediction, reference)),
    }


def _rouge_f(r: Mapping[str, Any], name: str) -> float | None:
    for k in (f"{name}_f", f"{name}_fmeasure", name):
        if k in r:
            v = r[k]
            return float(v.fmeasure if hasattr(v, "fmeasure") else v)
    return None

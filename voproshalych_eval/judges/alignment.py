"""Align a judge metric with its labels, and measure it honestly by k-fold cross-validation.

The optimizer (a bootstrap-few-shot search in the spirit of DSPy's ``BootstrapFewShot``, over the
production judge's own prompt): from the *training* items of a fold, with the current judge's verdicts on
them,

* **threshold** — where a score becomes a verdict (binary labels of a metric scored on a wider scale): the
  cut that maximises Cohen's kappa with the labels on the training items;
* **few-shot examples** — the training items the judge got wrong (its disagreements with people), balanced
  over the people's values, up to ``n_examples``; items it got right fill the rest;
* **instructions refined from the disagreements** — which way the judge errs (too lenient / too strict,
  with counts), whether its wrong verdicts go with long or short answers, and the people's reasons on them.

Each fold's version judges only the fold's held-out items; "before" (the built-in prompt) and "after" are
compared on the same held-out items, every item counted once: the agreement statistic of each with its
bootstrap CI, and the paired difference with its CI. ``adopted`` is true only when that CI lies above zero;
then the version built from all labels is stored as the metric's default, otherwise it is stored for its
lineage and the built-in prompt stays the default.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from voproshalych_eval.judges.agreement import LabelledItem, agreement, judge_items, judged_value
from voproshalych_eval.judges.labels import label_scale
from voproshalych_eval.judges.versions import JudgeVersion
from voproshalych_eval.metrics import agreement as am

__all__ = ["OPTIMIZER", "align", "build_version", "make_folds"]

OPTIMIZER = "bootstrap-few-shot on disagreements + threshold calibration + refined instructions (k-fold)"


def make_folds(items: Sequence[LabelledItem], k: int, *, kind: str, seed: int = 0) -> list[list[str]]:
    """``k`` disjoint folds of item keys covering every item, stratified by the people's value."""
    if k < 2:
        raise ValueError("folds must be at least 2")
    if len(items) < k:
        raise ValueError(f"{len(items)} labelled item(s) cannot make {k} folds")
    rng = random.Random(seed)
    by_value: dict[float, list[str]] = {}
    for it in items:
        by_value.setdefault(it.human(kind) if kind != "continuous" else 0.0, []).append(it.key)
    folds: list[list[str]] = [[] for _ in range(k)]
    i = 0
    for value in sorted(by_value):
        keys = sorted(by_value[value])
        rng.shuffle(keys)
        for key in keys:
            folds[i % k].append(key)
            i += 1
    return folds


def _best_threshold(humans: Sequence[float], scores: Sequence[float]) -> float | None:
    cuts = sorted(set(scores))
    best, best_k = None, -2.0
    for c in cuts:
        k = am.STATISTICS["kappa"](_arr(humans), _arr([1.0 if s >= c else 0.0 for s in scores]))
        if k > best_k + 1e-12:
            best, best_k = c, k
    return best


def _arr(x: Sequence[float]) -> Any:
    return np.asarray(x, dtype=float)


def build_version(metric: str, items: Sequence[LabelledItem], judged: Sequence[float | None],
                  scores: Sequence[float | None], *, kind: str, n_examples: int = 4, lang: str = "ru", seed: int = 0,
                  base: str | None = None, calibrate: bool = False) -> JudgeVersion:
    """An aligned version from training ``items``, the current judge's values on them (``judged``, on the
    labels' scale) and raw ``scores`` (for the threshold); see the module doc."""
    rng = random.Random(seed)
    ok = [i for i, v in enumerate(judged) if v is not None]
    humans = [items[i].human(kind) for i in ok]
    threshold = None
    if calibrate and kind == "binary":
        sc = [scores[i] for i in ok]
        if all(s is not None for s in sc) and len(set(sc)) > 2:
            threshold = _best_threshold(humans, sc)  # type: ignore[arg-type]
    wrong = [i for i in ok if judged[i] != items[i].human(kind)]
    right = [i for i in ok if judged[i] == items[i].human(kind)]
    chosen: list[int] = []
    groups: dict[float, list[int]] = {}
    for i in sorted(wrong, key=lambda i: (len(items[i].answer or ""), items[i].key)):
        groups.setdefault(items[i].human(kind), []).append(i)
    for g in groups.values():
        rng.shuffle(g)
    while len(chosen) < n_examples and any(groups.values()):  # round robin over the people's values
        for v in sorted(groups):
            if groups[v] and len(chosen) < n_examples:
                chosen.append(groups[v].pop())
    fill = sorted(right, key=lambda i: items[i].key)
    rng.shuffle(fill)
    chosen += fill[: max(0, n_examples - len(chosen))]
    examples = tuple({"item_key": items[i].key, "question": items[i].question, "answer": items[i].answer,
                      "contexts": list(items[i].contexts), "value": items[i].human(kind), "note": items[i].note}
                     for i in chosen)
    return JudgeVersion(metric, tuple(_instructions(items, judged, wrong, kind, lang)), examples, threshold, base,
                        {"n_train": len(items), "n_disagreements": len(wrong)})


def _instructions(items: Sequence[LabelledItem], judged: Sequence[float | None], wrong: Sequence[int], kind: str,
                  lang: str) -> list[str]:
    ru = lang != "en"
    if not wrong:
        return []
    out = []
    n = sum(1 for v in judged if v is not None)
    higher = [i for i in wrong if (judged[i] or 0) > items[i].human(kind)]
    lower = [i for i in wrong if (judged[i] or 0) < items[i].human(kind)]
    if len(higher) > len(lower):
        out.append(f"Эксперты строже: в {len(higher)} из {n} случаев оценка была выше, чем у экспертов; не завышай."
                   if ru else f"The experts are stricter: in {len(higher)} of {n} cases the score was above theirs; "
                   "do not overrate.")
    elif len(lower) > len(higher):
        out.append(f"Эксперты мягче: в {len(lower)} из {n} случаев оценка была ниже, чем у экспертов; не занижай."
                   if ru else f"The experts are more lenient: in {len(lower)} of {n} cases the score was below theirs; "
                   "do not underrate.")
    lengths = [len(it.answer or "") for it in items]
    mid = statistics.median(lengths) if lengths else 0
    long_wrong = sum(1 for i in higher if len(items[i].answer or "") > mid)
    if higher and long_wrong >= 0.75 * len(higher):
        out.append("Длина ответа не делает его верным: длинный ответ, не опирающийся на фрагмент или не отвечающий на "
                   "вопрос, оценивай так же строго, как короткий." if ru else
                   "Length does not make an answer right: judge a long answer that is not grounded in the fragment or "
                   "does not answer the question as strictly as a short one.")
    reasons = [note for note in dict.fromkeys(items[i].note for i in wrong) if note][:3]
    for r in reasons:
        out.append(("Причина экспертов в похожем случае: " if ru else "The experts' reason in a similar case: ") + r)
    return out


def align(judge_factory: Callable[[JudgeVersion | None], Any], metric: str, items: Sequence[LabelledItem], *,
          folds: int = 5, n_examples: int = 4, seed: int = 0, n_resamples: int = 1000, lang: str = "ru",
          concurrency: int | None = None, base: str | None = None) -> dict[str, Any]:
    """k-fold alignment of ``metric`` on ``items``. ``judge_factory(version)`` gives a judge (the built-in prompt
    for ``None``). Returns ``version`` (built from all items), ``folds`` (held-out item keys per fold, with the
    fold version's name and the example keys it saw), ``before`` / ``after`` (agreement on held-out items),
    ``difference`` (paired, with CI), ``adopted``, ``final`` (the final version), ``calls`` and ``duration_s``."""
    t0 = time.perf_counter()
    scale = label_scale(metric)
    kind = scale.kind
    fold_keys = make_folds(items, folds, kind=kind, seed=seed)
    by_key = {it.key: it for it in items}
    index = {it.key: i for i, it in enumerate(items)}
    base_judge = judge_factory(None)
    before_res = judge_items(base_judge, metric, items, concurrency=concurrency)
    before = [judged_value(r, kind) for r in before_res]
    scores = [None if r is None else r.score for r in before_res]
    calibrate = kind == "binary"  # takes effect only where the judge's scores are wider than a verdict
    after: list[float | None] = [None] * len(items)
    fold_info = []
    tokens = _tokens(before_res)
    for f, held in enumerate(fold_keys):
        held_set = set(held)
        train = [it for it in items if it.key not in held_set]
        tj = [before[index[it.key]] for it in train]
        ts = [scores[index[it.key]] for it in train]
        v = build_version(metric, train, tj, ts, kind=kind, n_examples=n_examples, lang=lang, seed=seed + f, base=base,
                          calibrate=calibrate)
        leaked = set(v.example_keys) & held_set
        if leaked:  # never: the version is built from the training items only
            raise AssertionError(f"fold {f + 1}: examples include held-out items {sorted(leaked)}")
        held_items = [by_key[k] for k in held]
        res = judge_items(judge_factory(v), metric, held_items, concurrency=concurrency)
        tokens = _add(tokens, _tokens(res))
        for it, r in zip(held_items, res, strict=True):
            after[index[it.key]] = judged_value(r, kind, v.threshold)
        fold_info.append({"fold": f + 1, "held_out": list(held),
                          "held_out_ids": [by_key[k].item_id or k for k in held], "version": v.version,
                          "examples": v.example_keys,
                          "train": [it.key for it in train], "threshold": v.threshold})
    humans = [it.human(kind) for it in items]
    both = [i for i in range(len(items)) if before[i] is not None and after[i] is not None]
    rep_before = agreement(humans, before, kind=kind, n_resamples=n_resamples, seed=seed)
    rep_after = agreement(humans, after, kind=kind, n_resamples=n_resamples, seed=seed)
    main = am.main_statistic(kind)
    stat = "alpha_interval" if kind == "continuous" and main == "alpha" else main
    diff: dict[str, Any] = {"delta": None, "ci": None, "significant": False, "n": len(both)}
    if both:
        diff = {**am.paired_difference_ci([humans[i] for i in both], [float(before[i] or 0.0) for i in both],
                                          [float(after[i] or 0.0) for i in both], statistic=stat, n_resamples=n_resamples,
                                          seed=seed), "n": len(both)}
    adopted = bool(diff["significant"] and (diff["delta"] or 0) > 0)
    final = build_version(metric, items, before, scores, kind=kind, n_examples=n_examples, lang=lang, seed=seed,
                          base=base, calibrate=calibrate)
    return {"metric": metric, "version": final.version, "final": final, "optimizer": OPTIMIZER, "kind": kind,
            "statistic": main, "folds": fold_info, "before": _short(rep_before, main), "after": _short(rep_after, main),
            "difference": diff, "adopted": adopted, "n_items": len(items), "calls": tokens.get("calls", 0),
            "tokens": tokens, "duration_s": round(time.perf_counter() - t0, 2),
            "items": [{"item_key": it.key, "human": humans[i], "before": before[i], "after": after[i]}
                      for i, it in enumerate(items)]}


def _short(rep: dict[str, Any], main: str) -> dict[str, Any]:
    out = {"n": rep["n"], "n_failed": rep["n_failed"], main: rep.get(main), "bias": rep.get("bias"),
           "confusion": rep.get("confusion")}
    if main in (rep.get(main) or {}):
        out[main] = rep[main]
    return out


def _tokens(results: Sequence[Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in results:
        if r is not None:
            for k, v in (r.tokens or {}).items():
                out[k] = out.get(k, 0) + int(v)
    return out


def _add(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    return {k: a.get(k, 0) + b.get(k, 0) for k in set(a) | set(b)}

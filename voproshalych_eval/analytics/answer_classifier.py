"""A learned classifier of the bot's answer texts (real answer vs the decline classes), checked by cross-validation.

Input: the log's distinct (normalised) answer texts, the class a hand-written rule gives each (or None), and the
classes a person gave some of them (:mod:`~voproshalych_eval.analytics.answer_labels`). Training set: every
labelled text (its label) plus every unlabelled text a rule fires on (the rule's class: a *seed*). Features:
character n-grams (``TfidfVectorizer(analyzer="char_wb")``) of the text, which need no URL, no knowledge base and
no embedder, plus a one-hot column per rule class (the rules are features, not the decision). Model:
``LogisticRegression`` (balanced class weights).

Check: k-fold cross-validation over the **labelled** texts only (a seed is never scored: it is the rule's
guess, not truth); in each fold the model is trained on the seeds and the other folds' labels. Reported: the
accuracy with its Wilson interval (:func:`~voproshalych_eval.metrics.statistics.proportion_ci`), the confusion
matrix (rows: the person's class, columns: the prediction) and its binary "answer vs decline" cells, which
:func:`~voproshalych_eval.metrics.classification.misclassification_adjusted_rate` carries into the CI of the
effective answered rate.

Decision: a labelled text takes its label; every other text the model's most probable class; texts whose top
probability is below ``uncertain_below`` are counted as uncertain (shown, not re-decided). With no labelled
real answer or no decline class in the training set, or fewer than ``min_labels`` labelled texts, there is no
classifier (``None``): the caller falls back to the patterns and says so (no accuracy is claimed).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from voproshalych_eval.metrics.statistics import proportion_ci

#: bump when the features, the model or the training set change (frozen in every run's configuration)
CLASSIFIER_VERSION = "answers-charwb-logreg-1"


@dataclass(frozen=True)
class ClassifierSettings:
    """What the classifier's decisions depend on (frozen in the run's parameters as ``answer_classifier``)."""

    version: str = CLASSIFIER_VERSION
    ngram_min: int = 2
    ngram_max: int = 5
    C: float = 10.0
    cv_folds: int = 5
    uncertain_below: float = 0.6
    min_labels: int = 10
    random_state: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> ClassifierSettings:
        d = dict(data or {})
        unknown = set(d) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"answer classifier: unknown settings {sorted(unknown)}")
        if d.get("version", CLASSIFIER_VERSION) != CLASSIFIER_VERSION:
            raise ValueError(f"answer classifier version {d['version']!r} is not this code's {CLASSIFIER_VERSION!r}")
        out = cls(**d)
        if (not 1 <= out.ngram_min <= out.ngram_max or out.C <= 0 or out.cv_folds < 2
                or not 0 <= out.uncertain_below <= 1 or out.min_labels < 2):
            raise ValueError(f"answer classifier: invalid settings {out.to_dict()}")
        return out


@dataclass
class ClassifierReport:
    """How the classifier was trained and how well it does on the labelled texts (cross-validated)."""

    classes: list[str]
    n_labels: int
    n_seeds: int
    n_predicted_texts: int
    n_uncertain_texts: int
    accuracy: dict[str, Any]
    confusion: dict[str, Any]
    answer_confusion: dict[str, int]
    settings: dict[str, Any]
    cv_folds: int
    per_text_proba: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))

    def to_dict(self) -> dict[str, Any]:
        return {"classes": self.classes, "n_labels": self.n_labels, "n_seeds": self.n_seeds,
                "n_predicted_texts": self.n_predicted_texts, "n_uncertain_texts": self.n_uncertain_texts,
                "accuracy": self.accuracy, "confusion": self.confusion, "answer_confusion": self.answer_confusion,
                "settings": self.settings, "cv_folds": self.cv_folds}


def _features(texts: Sequence[str], rule_classes: Sequence[str | None], rule_names: Sequence[str],
              vectorizer: Any, *, fit: bool) -> Any:
    from scipy import sparse  # heavy: defers scipy

    x_text = vectorizer.fit_transform(texts) if fit else vectorizer.transform(texts)
    col = {c: i for i, c in enumerate(rule_names)}
    rows = [i for i, c in enumerate(rule_classes) if c in col]
    x_rule = sparse.csr_matrix((np.ones(len(rows)), (rows, [col[rule_classes[i]] for i in rows])),  # type: ignore[index]
                               shape=(len(texts), len(rule_names)))
    return sparse.hstack([x_text, x_rule]).tocsr()


def _fit(texts: Sequence[str], rules: Sequence[str | None], y: Sequence[str], rule_names: Sequence[str],
         s: ClassifierSettings) -> tuple[Any, Any]:
    from sklearn.feature_extraction.text import TfidfVectorizer  # heavy: defers sklearn
    from sklearn.linear_model import LogisticRegression  # heavy: defers sklearn

    vec = TfidfVectorizer(analyzer="char_wb", ngram_range=(s.ngram_min, s.ngram_max), sublinear_tf=True)
    x = _features(texts, rules, rule_names, vec, fit=True)
    model = LogisticRegression(C=s.C, max_iter=2000, class_weight="balanced", random_state=s.random_state)
    model.fit(x, list(y))
    return vec, model


def _predict(vec: Any, model: Any, texts: Sequence[str], rules: Sequence[str | None],
             rule_names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    proba = model.predict_proba(_features(texts, rules, rule_names, vec, fit=False))
    classes = np.asarray(model.classes_, dtype=object)
    return classes[proba.argmax(axis=1)], proba.max(axis=1)


def trainable(label_classes: Sequence[str], seed_classes: Sequence[str], *, min_labels: int = 10) -> bool:
    """Whether a classifier can be trained and checked: at least ``min_labels`` labelled texts, two of them real
    answers (a seed is never a real answer: no rule says "this is an answer"), and at least one decline class."""
    all_classes = set(label_classes) | set(seed_classes)
    return (len(label_classes) >= min_labels and list(label_classes).count("answer") >= 2
            and len(all_classes - {"answer"}) >= 1)


def fit_predict(
    texts: Sequence[str],
    rule_classes: Sequence[str | None],
    labels: Mapping[str, str],
    *,
    settings: ClassifierSettings | None = None,
    rule_names: Sequence[str] = (),
) -> tuple[np.ndarray, ClassifierReport] | None:
    """Class of every text in ``texts`` (distinct normalised answers) and the cross-validated report.

    ``rule_classes[i]``: the class a rule gives ``texts[i]`` (None: no rule fires); ``labels``: normalised text →
    the person's class; ``rule_names``: every class a rule may give (one feature column each). None when the
    training set cannot make a classifier (:func:`trainable`).

    BLAS runs single-threaded here: the problem is small (hundreds to thousands of distinct texts) and a
    multi-threaded OpenBLAS on a shared machine made each fit ~10× slower, not faster."""
    from threadpoolctl import threadpool_limits  # heavy: defers threadpoolctl (+2 ms; used with sklearn only)

    with threadpool_limits(limits=1):
        return _fit_predict(texts, rule_classes, labels, settings=settings, rule_names=rule_names)


def _fit_predict(
    texts: Sequence[str],
    rule_classes: Sequence[str | None],
    labels: Mapping[str, str],
    *,
    settings: ClassifierSettings | None,
    rule_names: Sequence[str],
) -> tuple[np.ndarray, ClassifierReport] | None:
    from sklearn.metrics import confusion_matrix  # heavy: defers sklearn
    from sklearn.model_selection import KFold, StratifiedKFold  # heavy: defers sklearn

    s = settings or ClassifierSettings()
    texts = list(texts)
    rules = list(rule_classes)
    if len(rules) != len(texts):
        raise ValueError(f"{len(texts)} texts but {len(rules)} rule classes")
    lab_idx = [i for i, t in enumerate(texts) if t in labels]
    seed_idx = [i for i, t in enumerate(texts) if t not in labels and rules[i] is not None]
    y_lab = [labels[texts[i]] for i in lab_idx]
    y_seed = [str(rules[i]) for i in seed_idx]
    if not trainable(y_lab, y_seed, min_labels=s.min_labels):
        return None

    # cross-validation over the labelled texts; seeds always train, never score
    cv_pred = np.empty(len(lab_idx), dtype=object)
    counts = {c: y_lab.count(c) for c in set(y_lab)}
    n_splits = min(s.cv_folds, len(lab_idx))
    folds_used = 0
    if n_splits >= 2:
        splitter: Any = (StratifiedKFold(n_splits, shuffle=True, random_state=s.random_state)
                         if min(counts.values()) >= n_splits else KFold(n_splits, shuffle=True, random_state=s.random_state))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for train, test in splitter.split(np.zeros(len(lab_idx)), y_lab):
                tr_idx = [lab_idx[j] for j in train] + seed_idx
                tr_y = [y_lab[j] for j in train] + y_seed
                te_texts = [texts[lab_idx[j]] for j in test]
                if len(set(tr_y)) < 2:
                    cv_pred[test] = tr_y[0]
                else:
                    vec, model = _fit([texts[i] for i in tr_idx], [rules[i] for i in tr_idx], tr_y, rule_names, s)
                    cv_pred[test] = _predict(vec, model, te_texts, [rules[lab_idx[j]] for j in test], rule_names)[0]
                folds_used += 1
    classes = sorted(set(y_lab) | set(y_seed), key=lambda c: (c != "answer", c))
    if folds_used:
        hits = int(sum(p == t for p, t in zip(cv_pred, y_lab, strict=True)))
        lo, hi = proportion_ci(hits, len(y_lab))
        accuracy = {"value": hits / len(y_lab), "n": len(y_lab), "ci_low": lo, "ci_high": hi, "n_failed": 0}
        cm = confusion_matrix(y_lab, list(cv_pred), labels=classes)
        t_ans, p_ans = np.asarray(y_lab) == "answer", cv_pred == "answer"
        answer_cm = {"tp": int((t_ans & p_ans).sum()), "fp": int((~t_ans & p_ans).sum()),
                     "fn": int((t_ans & ~p_ans).sum()), "tn": int((~t_ans & ~p_ans).sum())}
    else:
        accuracy = {"value": None, "n": len(y_lab), "ci_low": None, "ci_high": None, "n_failed": 0}
        cm = np.zeros((len(classes), len(classes)), dtype=int)
        answer_cm = {"tp": 0, "fp": 0, "fn": 0, "tn": 0}

    # the final model on every label and seed; labelled texts keep their label
    tr_idx = lab_idx + seed_idx
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vec, model = _fit([texts[i] for i in tr_idx], [rules[i] for i in tr_idx], y_lab + y_seed, rule_names, s)
    pred, proba = _predict(vec, model, texts, rules, rule_names) if texts else (np.zeros(0, dtype=object), np.zeros(0))
    labelled = np.zeros(len(texts), dtype=bool)
    labelled[lab_idx] = True
    out = pred.copy()
    out[lab_idx] = y_lab
    proba = np.where(labelled, 1.0, proba)
    report = ClassifierReport(
        classes=classes, n_labels=len(lab_idx), n_seeds=len(seed_idx), n_predicted_texts=int((~labelled).sum()),
        n_uncertain_texts=int(((~labelled) & (proba < s.uncertain_below)).sum()), accuracy=accuracy,
        confusion={"labels": classes, "matrix": cm.astype(int).tolist()}, answer_confusion=answer_cm,
        settings=s.to_dict(), cv_folds=folds_used, per_text_proba=proba)
    return out, report

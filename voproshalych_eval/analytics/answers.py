"""What the bot actually replied: real answers vs declines in disguise (the *effective* answered rate).

A non-empty ``answer`` is not always an answer. Production logs hold "Ответ не найден.", "Что-то в
вашем вопросе меня смущает…", "Извините, но в предоставленном фрагменте…" and greeting/fallback
templates in the same column, so the raw answered rate (non-empty answer) is too optimistic.

Every row gets one class (:data:`ANSWER_CLASSES`):

* ``empty`` — no answer at all (the raw "unanswered");
* ``not_found`` — the bot says it found nothing (in the knowledge base or in the retrieved fragment);
* ``refusal`` — the bot refuses (off-topic, jailbreak, "something in your question bothers me");
* ``template`` — a greeting / thanks template, not an answer to a question;
* ``error`` — an error fallback ("произошла ошибка, попробуйте позже");
* ``clarification`` — the bot asks the user to clarify instead of answering;
* ``answer`` — everything else: a real answer.

Who decides, per distinct (normalised: lowercase, ``ё → е``, whitespace) answer text:

1. **labels** — the class a person gave the text (the bot's most frequent answers, labelled once on the Real
   users page, :mod:`~voproshalych_eval.analytics.answer_labels`; and the ``overrides`` of a rules file);
2. **the classifier** (:mod:`~voproshalych_eval.analytics.answer_classifier`) for every other text: trained on
   the labels plus the texts a **pattern** (case-insensitive regular expressions per class,
   :data:`DEFAULT_PATTERNS`, optionally only for texts up to ``max_chars``) fires on; the pattern's class is
   also one of its features. Its cross-validated accuracy (Wilson CI) and confusion matrix are in
   :attr:`AnswerClasses.report`, and its errors are carried into the CI of the effective answered rate;
3. without a labelled real answer (nothing to learn from) the **patterns** decide, and no accuracy is claimed.

Nothing depends on the page URLs: a log exported without them gets the same classes.

``effective answered rate = |{answer}| / n``; ``raw answered rate − effective answered rate =
|{not_found, refusal, template, error, clarification}| / n`` exactly (the classified declines).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from voproshalych_eval.analytics.answer_classifier import ClassifierReport, ClassifierSettings, fit_predict
from voproshalych_eval.analytics.text_ru import normalize
from voproshalych_eval.datasets.files import FieldError, RecordFileError, as_int, read_json_object
from voproshalych_eval.metrics.classification import misclassification_adjusted_rate

ANSWER_CLASSES = ("answer", "not_found", "refusal", "template", "error", "clarification", "empty")
DECLINE_CLASSES = ("not_found", "refusal", "template", "error", "clarification")
#: what a pattern or an override may assign: a non-empty text is never ``empty``
OVERRIDE_CLASSES = DECLINE_CLASSES + ("answer",)
CLASS_NAMES = {
    "answer": ("ответ", "answer"),
    "not_found": ("«ответ не найден»", "not found"),
    "refusal": ("отказ", "refusal"),
    "template": ("шаблон (приветствие, благодарность)", "template (greeting, thanks)"),
    "error": ("сообщение об ошибке", "error fallback"),
    "clarification": ("просьба уточнить", "clarification request"),
    "empty": ("нет ответа", "no answer"),
}

DEFAULT_PATTERNS: tuple[dict[str, Any], ...] = (
    {"class": "not_found",
     "pattern": r"^ответ не найден|^не (удалось|смог\w*) найти (ответ|информац)|^(извините|к сожалению)[,!.]?\s*(но\s+)?"
                r"(в|из) (предоставленн|данн|это)\w* (фрагмент|контекст|текст|документ)"
                r"|^(извините|к сожалению)[,!.]?\s*(но\s+)?(я\s+)?не (наш\w*|наход\w*|знаю|располага\w*)"
                r"|^(извините|к сожалению)[,!.]?\s*(но\s+)?(у меня )?нет (информации|данных|сведений|ответа)",
     "max_chars": 400,
     "note": "«Ответ не найден», «Извините, но в предоставленном фрагменте…», «К сожалению, нет информации…»"},
    {"class": "refusal",
     "pattern": r"что-то в вашем вопросе меня смущает|не могу (ответить|выполнить|помочь с это|обсуждать)"
                r"|(могу|буду) (отвечать|подсказать|помочь) только (на|по|с)|отвечаю только на вопросы"
                r"|только на вопросы,? (связанные|об|о|про)",
     "max_chars": 400,
     "note": "«Что-то в вашем вопросе меня смущает», «я отвечаю только на вопросы об учёбе», «не могу выполнить»"},
    {"class": "template",
     "pattern": r"^(здравствуйте|привет|добрый (день|вечер)|доброе утро)\b|рад\w* (был\w* )?помочь|обращайтесь"
                r"|^(всегда )?пожалуйста\b|чем (я )?могу помочь|задайте (ваш |свой )?вопрос",
     "max_chars": 250,
     "note": "приветствия, «Рад был помочь», «Обращайтесь», «Задайте вопрос…» (только короткие тексты)"},
    {"class": "error",
     "pattern": r"(произошла|возникла|случилась) (\w+ )?ошибка|сервис (временно )?недоступен|попробуйте (еще раз )?позже"
                r"|технические (работы|неполадки)|something went wrong|internal (server )?error",
     "max_chars": 300,
     "note": "«Произошла ошибка, попробуйте позже», «Сервис временно недоступен»"},
    {"class": "clarification",
     "pattern": r"^(пожалуйста,? )?уточните|не (совсем )?понял\w* (ваш )?вопрос|что (именно )?вы имеете в виду"
                r"|^(какой|какую|какое|какие|о каком|о какой) .{0,60}\?$",
     "max_chars": 300,
     "note": "«Уточните, пожалуйста, вопрос», «Не совсем понял ваш вопрос», «Что вы имеете в виду?»"},
)
#: keys of older rules files (the URL-based "frequent template" rule, removed): accepted and ignored
LEGACY_RULE_KEYS = ("min_template_count", "min_template_pages")


@dataclass
class AnswerRules:
    """Everything that decides the class of an answer text (see the module docstring)."""

    patterns: list[dict[str, Any]] = field(default_factory=lambda: [dict(p) for p in DEFAULT_PATTERNS])
    overrides: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        allowed = ", ".join(OVERRIDE_CLASSES)
        for i, p in enumerate(self.patterns, start=1):
            cls = p.get("class")
            if cls not in OVERRIDE_CLASSES:
                raise FieldError(f"patterns[{i}].class", f"answer rule {i}: class {cls!r} is not one of {allowed}")
            try:
                re.compile(str(p.get("pattern") or ""))
            except re.error as exc:
                raise FieldError(f"patterns[{i}].pattern",
                                 f"answer rule {i} ({cls}): invalid regular expression: {exc}") from None
        bad = {t: c for t, c in self.overrides.items() if c not in OVERRIDE_CLASSES}
        if bad:
            text, cls = next(iter(bad.items()))
            raise FieldError("overrides", f"answer override {text[:60]!r}: class {cls!r} is not one of {allowed}"
                             + (" (a non-empty answer is never 'empty')" if cls == "empty" else ""))
        self.overrides = {normalize(t): c for t, c in self.overrides.items()}

    def to_dict(self) -> dict[str, Any]:
        return {"patterns": self.patterns, "overrides": self.overrides}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AnswerRules:
        """Rules from their :meth:`to_dict` form; a bad value raises :class:`FieldError` naming the field."""
        if not isinstance(data, dict):
            raise FieldError(None, "answer rules must be a JSON object {patterns, overrides}")
        unknown = set(data) - {"patterns", "overrides", *LEGACY_RULE_KEYS}
        if unknown:
            raise FieldError(sorted(unknown)[0], f"answer rules: unknown keys {sorted(unknown)}")
        kwargs: dict[str, Any] = {}
        if "patterns" in data:
            if not isinstance(data["patterns"], list) or not all(isinstance(p, dict) for p in data["patterns"]):
                raise FieldError("patterns", "expected a list of objects {class, pattern, max_chars, note}")
            kwargs["patterns"] = [dict(p) for p in data["patterns"]]
        if "overrides" in data:
            if not isinstance(data["overrides"], dict):
                raise FieldError("overrides", "expected an object {answer text: class}")
            kwargs["overrides"] = {str(k): str(v) for k, v in data["overrides"].items()}
        for key in LEGACY_RULE_KEYS:  # validated so an old file with a typo still says where, then ignored
            as_int(data.get(key), key, lo=1)
        return cls(**kwargs)

    @classmethod
    def from_file(cls, path: str | Path) -> AnswerRules:
        """Rules from a JSON file, read like every input file (:func:`~voproshalych_eval.datasets.files.read_json_object`:
        a BOM or cp1251 is decoded); errors name the file and the field (:class:`RecordFileError`)."""
        p = Path(path)
        data = read_json_object(p, name=str(p))
        try:
            return cls.from_dict(data)
        except FieldError as exc:
            raise RecordFileError(str(p), None, exc.field, exc.message) from None


@lru_cache(maxsize=64)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


def _pattern_class(text: str, rules: AnswerRules) -> tuple[str, str] | None:
    for i, p in enumerate(rules.patterns, start=1):
        limit = p.get("max_chars")
        if limit and len(text) > int(limit):
            continue
        if _compiled(str(p["pattern"])).search(text):
            return str(p["class"]), f"pattern {i}"
    return None


@dataclass
class AnswerClasses:
    """Class of every row (aligned with the log), what decided it, the frequent-texts table and the classifier's
    cross-validated report (None when the patterns decided: nothing labelled to learn from)."""

    classes: np.ndarray  # str per row, one of ANSWER_CLASSES
    rule: np.ndarray  # str per row: "label", "classifier", "uncertain", "pattern N", "default", "empty"
    frequent: pd.DataFrame
    rules: AnswerRules
    report: ClassifierReport | None = None
    labelled: np.ndarray | None = None  # bool per row: the text's class was given by a person

    @property
    def raw_answered(self) -> np.ndarray:
        return self.classes != "empty"

    @property
    def effective_answered(self) -> np.ndarray:
        return self.classes == "answer"

    @property
    def declined(self) -> np.ndarray:
        return np.isin(self.classes, DECLINE_CLASSES)

    def effective_rate_ci(self) -> dict[str, Any] | None:
        """The effective answered rate with the classifier's errors carried into a 95% interval
        (:func:`~voproshalych_eval.metrics.classification.misclassification_adjusted_rate`: rows of labelled
        texts are known, rows the model classified are corrected by its cross-validated PPV / false-omission
        rate for "answer"). None without a classifier or without a cross-validation."""
        if self.report is None or not self.report.cv_folds:
            return None
        labelled = self.labelled if self.labelled is not None else np.zeros(len(self.classes), dtype=bool)
        model = ~labelled & self.raw_answered
        out = misclassification_adjusted_rate(
            n_total=len(self.classes), n_known_positive=int((labelled & self.effective_answered).sum()),
            n_predicted_positive=int((model & self.effective_answered).sum()),
            n_predicted_negative=int((model & ~self.effective_answered).sum()), **self.report.answer_confusion)
        return {**out, "n_failed": 0}

    def metrics(self) -> dict[str, Any]:
        n = len(self.classes)
        counts = {c: int((self.classes == c).sum()) for c in ANSWER_CLASSES}
        out: dict[str, Any] = {
            "answered_rate": float(self.raw_answered.mean()) if n else None,
            "effective_answered_rate": float(self.effective_answered.mean()) if n else None,
            "n_declined": int(self.declined.sum()),
            "declined_share_of_answered": (float(self.declined.sum() / self.raw_answered.sum())
                                           if self.raw_answered.any() else None),
            **{f"n_answer_{c}": v for c, v in counts.items()},
            "n_answer_labels": self.report.n_labels if self.report is not None else 0,
        }
        if self.report is not None:
            out["answer_classifier_accuracy"] = self.report.accuracy
            out["effective_answered_rate_ci"] = self.effective_rate_ci()
            out["n_answer_uncertain"] = int((self.rule == "uncertain").sum())
        return out

    def table(self) -> pd.DataFrame:
        """Rows per class (for the page and the report)."""
        n = len(self.classes)
        return pd.DataFrame([{"class": c, "rows": int((self.classes == c).sum()),
                              "share": float((self.classes == c).mean()) if n else 0.0} for c in ANSWER_CLASSES])


def classify_answers(
    answers: Sequence[Any],
    urls: Sequence[Any] | None = None,
    *,
    rules: AnswerRules | None = None,
    labels: Mapping[str, str] | None = None,
    classifier: ClassifierSettings | None = None,
    top_n: int = 40,
) -> AnswerClasses:
    """Class of every answer (module docstring). ``labels``: a person's classes by answer text (normalised here);
    ``urls`` (may be None) only fill the informative ``pages`` column of the frequent table — no class depends
    on them."""
    rules = rules or AnswerRules()
    n = len(answers)
    norm = [normalize(a) if isinstance(a, str) else "" for a in answers]
    url_list = [(u if isinstance(u, str) and u.strip() else None) for u in (urls if urls is not None else [None] * n)]
    if len(url_list) != n:
        raise ValueError(f"{n} answers but {len(url_list)} urls")
    person = {**rules.overrides, **{normalize(t): c for t, c in (labels or {}).items()}}
    bad = {t: c for t, c in person.items() if c not in OVERRIDE_CLASSES}
    if bad:
        text, cls = next(iter(bad.items()))
        raise FieldError("class", f"answer label {text[:60]!r}: class {cls!r} is not one of {', '.join(OVERRIDE_CLASSES)}")
    frame = pd.DataFrame({"text": norm, "url": url_list})
    filled = frame[frame["text"] != ""]
    g = filled.groupby("text")
    stats = pd.DataFrame({"count": g.size(), "pages": g["url"].nunique()})
    texts = [str(t) for t in stats.index]
    hits = [_pattern_class(t, rules) for t in texts]
    rule_classes = [h[0] if h else None for h in hits]
    fitted = fit_predict(texts, rule_classes, person, settings=classifier,
                         rule_names=sorted({str(p["class"]) for p in rules.patterns}))
    by_text: dict[str, tuple[str, str]] = {}
    report: ClassifierReport | None = None
    if fitted is not None:
        pred, report = fitted
        s = classifier or ClassifierSettings()
        for t, c, pr in zip(texts, pred, report.per_text_proba, strict=True):
            how = "label" if t in person else ("uncertain" if pr < s.uncertain_below else "classifier")
            by_text[t] = (str(c), how)
    else:
        for t, h in zip(texts, hits, strict=True):
            by_text[t] = (person[t], "label") if t in person else (h if h is not None else ("answer", "default"))
    classes = np.asarray([by_text[t][0] if t else "empty" for t in norm], dtype=object)
    rule = np.asarray([by_text[t][1] if t else "empty" for t in norm], dtype=object)
    labelled = np.asarray([bool(t) and t in person for t in norm], dtype=bool)

    # the log's most frequent answer texts with their class: what a person checks and labels
    first_text = {}
    for a, t in zip(answers, norm, strict=True):
        if t and t not in first_text:
            first_text[t] = str(a)
    top = stats.sort_values(["count", "pages"], ascending=[False, False]).head(top_n)
    extra = [t for t, (c, _) in by_text.items() if c != "answer" and t not in set(top.index)]
    # declines the top list may miss (long tail of "not found" variants) are listed too
    rows = list(top.index) + list(stats.loc[extra].sort_values("count", ascending=False).head(top_n).index)
    frequent = pd.DataFrame({
        "answer": [first_text[str(t)] for t in rows],
        "count": stats.loc[rows, "count"].to_numpy(int),
        "pages": stats.loc[rows, "pages"].to_numpy(int),
        "class": [by_text[str(t)][0] for t in rows],
        "rule": [by_text[str(t)][1] for t in rows],
        "labelled": [str(t) in person for t in rows],
    }, columns=["answer", "count", "pages", "class", "rule", "labelled"])
    return AnswerClasses(classes, rule, frequent, rules, report, labelled)

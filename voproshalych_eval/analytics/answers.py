"""What the bot actually replied: real answers vs declines in disguise (the *effective* answered rate).

A non-empty ``answer`` is not always an answer. Production logs hold "Ответ не найден.", "Что-то в
вашем вопросе меня смущает…", "Извините, но в предоставленном фрагменте…" and greeting/fallback
templates in the same column, so the raw answered rate (non-empty answer) is too optimistic.

Every row gets one class (:data:`ANSWER_CLASSES`):

* ``empty`` — no answer at all (the raw "unanswered");
* ``not_found`` — the bot says it found nothing (in the knowledge base or in the retrieved fragment);
* ``refusal`` — the bot refuses (off-topic, jailbreak, "something in your question bothers me");
* ``template`` — a greeting / thanks / fallback template, not an answer to a question;
* ``answer`` — everything else: a real answer.

Rules, applied in this order (the first that fires wins), all shown and editable (:class:`AnswerRules`):

1. **overrides**: exact answer texts (normalised: lowercase, ``ё → е``, whitespace) mapped to a class —
   what a person set on the page or in a rules file; only to a decline class or ``answer``
   (:data:`OVERRIDE_CLASSES`): ``empty`` means "no text at all", so a non-empty text mapped to it would
   leave the raw answered rate and break the identity below;
2. **patterns**: case-insensitive regular expressions per class (:data:`DEFAULT_PATTERNS`) on the
   normalised text, optionally only for texts up to ``max_chars`` characters (a greeting in front of a
   long real answer stays an answer);
3. **frequent template** (from the log's own most frequent answer texts): the same text given at least
   ``min_template_count`` times and either with no page at all or from at least ``min_template_pages``
   different pages is a template — a generated answer is written from one page's chunk, so one
   identical text across several pages is not an answer to those questions.

``effective answered rate = |{answer}| / n``; ``raw answered rate − effective answered rate =
|{not_found, refusal, template}| / n`` exactly (the classified declines).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from voproshalych_eval.analytics.text_ru import normalize
from voproshalych_eval.record_files import FieldError, RecordFileError, as_int, read_json_object

ANSWER_CLASSES = ("answer", "not_found", "refusal", "template", "empty")
DECLINE_CLASSES = ("not_found", "refusal", "template")
#: what a pattern or an override may assign: a non-empty text is never ``empty``
OVERRIDE_CLASSES = DECLINE_CLASSES + ("answer",)
CLASS_NAMES = {
    "answer": ("ответ", "answer"),
    "not_found": ("«ответ не найден»", "not found"),
    "refusal": ("отказ", "refusal"),
    "template": ("шаблон (приветствие, заглушка)", "template (greeting, fallback)"),
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
)


@dataclass
class AnswerRules:
    """Everything that decides the class of an answer text (see the module docstring)."""

    patterns: list[dict[str, Any]] = field(default_factory=lambda: [dict(p) for p in DEFAULT_PATTERNS])
    overrides: dict[str, str] = field(default_factory=dict)
    min_template_count: int = 5
    min_template_pages: int = 3

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
        return {"patterns": self.patterns, "overrides": self.overrides,
                "min_template_count": self.min_template_count, "min_template_pages": self.min_template_pages}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AnswerRules:
        """Rules from their :meth:`to_dict` form; a bad value raises :class:`FieldError` naming the field."""
        if not isinstance(data, dict):
            raise FieldError(None, "answer rules must be a JSON object {patterns, overrides, min_template_count, ...}")
        unknown = set(data) - {"patterns", "overrides", "min_template_count", "min_template_pages"}
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
        for key in ("min_template_count", "min_template_pages"):
            value = as_int(data.get(key), key, lo=1)
            if value is not None:
                kwargs[key] = value
        return cls(**kwargs)

    @classmethod
    def from_file(cls, path: str | Path) -> AnswerRules:
        """Rules from a JSON file, read like every input file (:func:`~voproshalych_eval.record_files.read_json_object`:
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
    """Class of every row (aligned with the log), the rule that decided it, and the frequent-texts table."""

    classes: np.ndarray  # str per row, one of ANSWER_CLASSES
    rule: np.ndarray  # str per row: "override", "pattern N", "frequent template", "default", "empty"
    frequent: pd.DataFrame
    rules: AnswerRules

    @property
    def raw_answered(self) -> np.ndarray:
        return self.classes != "empty"

    @property
    def effective_answered(self) -> np.ndarray:
        return self.classes == "answer"

    @property
    def declined(self) -> np.ndarray:
        return np.isin(self.classes, DECLINE_CLASSES)

    def metrics(self) -> dict[str, Any]:
        n = len(self.classes)
        counts = {c: int((self.classes == c).sum()) for c in ANSWER_CLASSES}
        return {
            "answered_rate": float(self.raw_answered.mean()) if n else None,
            "effective_answered_rate": float(self.effective_answered.mean()) if n else None,
            "n_declined": int(self.declined.sum()),
            "declined_share_of_answered": (float(self.declined.sum() / self.raw_answered.sum())
                                           if self.raw_answered.any() else None),
            **{f"n_answer_{c}": v for c, v in counts.items()},
        }

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
    top_n: int = 40,
) -> AnswerClasses:
    """Class of every answer (module docstring); ``urls`` are the pages the bot answered from (may be None)."""
    rules = rules or AnswerRules()
    n = len(answers)
    norm = [normalize(a) if isinstance(a, str) else "" for a in answers]
    url_list = [(u if isinstance(u, str) and u.strip() else None) for u in (urls if urls is not None else [None] * n)]
    if len(url_list) != n:
        raise ValueError(f"{n} answers but {len(url_list)} urls")
    frame = pd.DataFrame({"text": norm, "url": url_list})
    filled = frame[frame["text"] != ""]
    g = filled.groupby("text")
    stats = pd.DataFrame({"count": g.size(), "pages": g["url"].nunique(), "with_page": g["url"].count()})
    stats["no_page"] = stats["with_page"] == 0

    by_text: dict[str, tuple[str, str]] = {}
    for text, r in stats.iterrows():
        t = str(text)
        if t in rules.overrides:
            by_text[t] = (rules.overrides[t], "override")
            continue
        hit = _pattern_class(t, rules)
        if hit is not None:
            by_text[t] = hit
        elif int(r["count"]) >= rules.min_template_count and (bool(r["no_page"]) or int(r["pages"]) >= rules.min_template_pages):
            by_text[t] = ("template", "frequent template")
        else:
            by_text[t] = ("answer", "default")
    classes = np.asarray([by_text[t][0] if t else "empty" for t in norm], dtype=object)
    rule = np.asarray([by_text[t][1] if t else "empty" for t in norm], dtype=object)

    # the log's most frequent answer texts with their class: what a person checks and edits
    first_text = {}
    for a, t in zip(answers, norm, strict=True):
        if t and t not in first_text:
            first_text[t] = str(a)
    top = stats.sort_values(["count", "pages"], ascending=[False, False]).head(top_n)
    frequent = pd.DataFrame({
        "answer": [first_text[str(t)] for t in top.index],
        "count": top["count"].to_numpy(int),
        "pages": top["pages"].to_numpy(int),
        "class": [by_text[str(t)][0] for t in top.index],
        "rule": [by_text[str(t)][1] for t in top.index],
    }, columns=["answer", "count", "pages", "class", "rule"])
    # declines the top list may miss (long tail of "not found" variants) are listed too
    extra = [t for t, (c, _) in by_text.items() if c != "answer" and t not in set(top.index)]
    if extra:
        ex = stats.loc[extra].sort_values("count", ascending=False).head(top_n)
        frequent = pd.concat([frequent, pd.DataFrame({
            "answer": [first_text[str(t)] for t in ex.index], "count": ex["count"].to_numpy(int),
            "pages": ex["pages"].to_numpy(int), "class": [by_text[str(t)][0] for t in ex.index],
            "rule": [by_text[str(t)][1] for t in ex.index]})], ignore_index=True)
    return AnswerClasses(classes, rule, frequent, rules)

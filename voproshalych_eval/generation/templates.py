"""Offline template generator: questions built from the chunk's own sentences (no LLM).

It exists so that the generation flow works end to end without an LLM; its items are marked
``offline`` (``generation.offline = true``, generator ``offline-templates``) and are **not a substitute**
for an LLM-generated set: the questions are mechanical and reuse the chunk's words.

For a slot with focus ``f`` the sentence ``sentences[f mod n]`` of the chunk (sentences of at least
five words) is used:

* ``factual`` — a cloze (``Дополните: «… ___ …»``, the blank is the first number or, failing that, the
  longest word after the first two) or a wh-question about a key phrase (``Что сказано о «…»?``),
  alternating with ``f``; the answer is the sentence;
* ``paraphrase`` — the wh-question in student register: lower case, no punctuation, words replaced
  by their slang (the inverse of :data:`voproshalych_eval.analytics.text_ru.DEFAULT_SLANG`), a filler
  (``подскажите плиз``) and one deterministic typo (two neighbouring letters swapped);
* ``multi_chunk`` — the wh-questions of a sentence of each chunk joined (``… И ещё: …``); the answer
  is both sentences;
* ``conditional`` — a sentence with ``если`` / ``в случае`` / ``при условии``: ``Что будет, если …?`` (at
  most six words of the clause); without such a sentence ``Если мне нужно «<key phrase>», что делать?``;
* ``unanswerable`` — a question about the key phrase that knowledge bases rarely answer (mobile app,
  statistics of last year, Gosuslugi); the ``answerable`` gate drops it when the nearest chunk answers it;
* ``follow_up`` — the wh-question of one sentence, then ``А «<key phrase of the next sentence>»?``;
  the answer is the next sentence.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from voproshalych_eval.analytics.text_ru import DEFAULT_SLANG, STOP_WORDS
from voproshalych_eval.llm.offline import split_sentences

GENERATOR_NAME = "offline-templates"
MIN_WORDS = 5
#: words of a condition clause kept in a conditional question (a longer clause would copy the chunk)
MAX_CLAUSE_WORDS = 6

_WORD = re.compile(r"[\w-]+", re.UNICODE)
_NUMBER = re.compile(r"\d[\d  .,:]*\d|\d")
_CONDITION = re.compile(r"\b(если|в случае|при условии)\b\s+([^,.;:]+)", re.IGNORECASE)

_T = {
    "ru": {
        "cloze": "Дополните: «{text}»",
        "wh": "Что сказано о «{kp}»?",
        "multi": "{a} И ещё: {b}",
        "cond": "Что будет, если {clause}?",
        "cond_fallback": "Если мне нужно «{kp}», что делать?",
        "follow": "А «{kp}»?",
        "filler": "подскажите плиз",
        "unanswerable": (
            "Есть ли у университета мобильное приложение для темы «{kp}»?",
            "Сколько студентов в прошлом году обращались по вопросу «{kp}»?",
            "Можно ли оформить «{kp}» через Госуслуги?",
        ),
        "no_info": "В базе знаний нет этой информации.",
    },
    "en": {
        "cloze": "Fill in the blank: \"{text}\"",
        "wh": "What does the knowledge base say about \"{kp}\"?",
        "multi": "{a} And also: {b}",
        "cond": "What happens if {clause}?",
        "cond_fallback": "If I need \"{kp}\", what should I do?",
        "follow": "And \"{kp}\"?",
        "filler": "pls tell me",
        "unanswerable": (
            "Does the university have a mobile app for \"{kp}\"?",
            "How many students asked about \"{kp}\" last year?",
            "Can \"{kp}\" be arranged through the state services portal?",
        ),
        "no_info": "The knowledge base has no such information.",
    },
}

#: normal word -> slang (the inverse of the question-log slang dictionary; single-word normal forms only)
_TO_SLANG: dict[str, str] = {}
for _slang, _normal in DEFAULT_SLANG.items():
    if " " not in _normal and _normal not in _TO_SLANG and len(_slang) >= 3:
        _TO_SLANG[_normal] = _slang


def _digest(*parts: Any) -> int:
    return int(hashlib.sha256("|".join(map(str, parts)).encode("utf-8")).hexdigest()[:8], 16)


def sentences(text: str) -> list[str]:
    """The chunk's sentences of at least :data:`MIN_WORDS` words."""
    return [s for s in split_sentences(text) if len(_WORD.findall(s)) >= MIN_WORDS]


def key_phrase(sentence: str, n: int = 3) -> str:
    """``n`` consecutive content words from the middle of the sentence (stop words skipped)."""
    words = [w for w in _WORD.findall(sentence) if w.lower().replace("ё", "е") not in STOP_WORDS and not w.isdigit()]
    if not words:
        return sentence.strip()[:60]
    mid = max(0, len(words) // 2 - n // 2)
    return " ".join(words[mid : mid + n])


def cloze(sentence: str) -> tuple[str, str]:
    """The sentence with its blank (``___``) and the blanked span."""
    m = _NUMBER.search(sentence)
    if m:
        span = m.group(0)
        return sentence[: m.start()] + "___" + sentence[m.end():], span
    words = _WORD.findall(sentence)
    cands = words[2:] or words
    span = max(cands, key=len)
    i = sentence.find(span, sentence.find(words[min(2, len(words) - 1)]))
    i = i if i >= 0 else sentence.find(span)
    return sentence[:i] + "___" + sentence[i + len(span):], span


def _wh(sentence: str, lang: str) -> str:
    return _T[lang]["wh"].format(kp=key_phrase(sentence))


def student_register(question: str, seed: int) -> str:
    """Lower case, no punctuation, slang words, a filler and one swapped letter pair (deterministic)."""
    words = [w.lower().replace("ё", "е") for w in _WORD.findall(question)]
    words = [_TO_SLANG.get(w, w) for w in words]
    long = [i for i, w in enumerate(words) if len(w) >= 6 and w.isalpha()]
    if long:
        i = long[seed % len(long)]
        w = words[i]
        j = 1 + seed % (len(w) - 2)
        words[i] = w[:j] + w[j + 1] + w[j] + w[j + 2:]
    return " ".join(words)


def template_item(question_type: str, chunks: list[str], focus: int, *, lang: str = "ru") -> dict[str, Any] | None:
    """``{"question", "answer", "template"[, "first_question"]}`` for a slot, or None when no template applies
    (the chunk has no sentence of :data:`MIN_WORDS` words; ``multi_chunk``: neither has the second chunk)."""
    t = _T["en" if lang == "en" else "ru"]
    lang = "en" if lang == "en" else "ru"
    sents = sentences(chunks[0]) if chunks else []
    if not sents:
        return None
    s = sents[focus % len(sents)]
    if question_type == "factual":
        if focus % 2 == 0:
            blanked, _span = cloze(s)
            return {"question": t["cloze"].format(text=blanked), "answer": s, "template": "cloze"}
        return {"question": _wh(s, lang), "answer": s, "template": "wh"}
    if question_type == "paraphrase":
        q = t["filler"] + " " + student_register(_wh(s, lang), _digest(s, focus))
        return {"question": q, "answer": s, "template": "student_register"}
    if question_type == "multi_chunk":
        other = sentences(chunks[1]) if len(chunks) > 1 else []
        if not other:
            return None
        s2 = other[focus % len(other)]
        return {"question": t["multi"].format(a=_wh(s, lang), b=_wh(s2, lang)), "answer": f"{s} {s2}", "template": "wh+wh"}
    if question_type == "conditional":
        for k in range(len(sents)):
            cand = sents[(focus + k) % len(sents)]
            m = _CONDITION.search(cand)
            if m and len(_WORD.findall(m.group(2))) >= 2:
                clause = " ".join(_WORD.findall(m.group(2))[:MAX_CLAUSE_WORDS])
                return {"question": t["cond"].format(clause=clause), "answer": cand, "template": "condition"}
        return {"question": t["cond_fallback"].format(kp=key_phrase(s)), "answer": s, "template": "condition_fallback"}
    if question_type == "unanswerable":
        options = t["unanswerable"]
        q = options[_digest(s, focus) % len(options)].format(kp=key_phrase(s))
        return {"question": q, "answer": t["no_info"], "template": "out_of_kb"}
    if question_type == "follow_up":
        nxt = sents[(focus + 1) % len(sents)]
        return {"first_question": _wh(s, lang), "question": t["follow"].format(kp=key_phrase(nxt)), "answer": nxt,
                "template": "wh+follow"}
    raise ValueError(f"unknown question type {question_type!r}")

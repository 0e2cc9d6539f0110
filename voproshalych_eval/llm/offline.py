"""Offline stand-ins used when no LLM endpoint is configured. Every number they produce is labelled
``"offline heuristic"`` (``offline = True``); they are deterministic.

:class:`OfflineJudge` — embedding and lexical evidence:

* faithfulness = share of answer sentences *supported* by some context sentence; a sentence is supported
  when ``containment >= 0.6`` (share of its stemmed tokens present in that context sentence) or
  ``cos >= 0.75`` (embedding cosine);
* answer relevance = ``max(0, cos(question, answer))``;
* answer correctness = ``0.5 * max(0, cos(answer, reference)) + 0.5 * token_F1(answer, reference)`` (stemmed);
* e2e = mean of relevance and correctness (and faithfulness when contexts are given);
* show/no-show = ``Yes`` when faithfulness >= 0.5 and relevance >= 0.3, else ``No: <reason>``.

:class:`ExtractiveGenerator` — the ``k`` context sentences most similar to the question, in their
original order (no text is invented).
"""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlalchemy import Engine

from voproshalych_eval.config import get_settings
from voproshalych_eval.llm.generation import Generation
from voproshalych_eval.metrics.text_overlap import tokenize

OFFLINE_LABEL = "offline heuristic"
SUPPORT_CONTAINMENT = 0.6
SUPPORT_COSINE = 0.75

_SENT_RE = re.compile(r"(?<=[.!?…])\s+|\n+")


def split_sentences(text: str | None) -> list[str]:
    """Sentences (and lines) of ``text``, stripped, without empty ones."""
    if not text:
        return []
    return [s.strip() for s in _SENT_RE.split(text) if s and s.strip() and re.search(r"\w", s)]


def default_embedder(settings: Any = None, engine: Engine | None = None) -> Any:
    """The configured embedder (behind the DB cache when an engine is given)."""
    # heavy: defers pandas (via embeddings)
    from voproshalych_eval.embeddings import cached_embedder, get_embedder

    if settings is None:
        settings = get_settings()
    name = getattr(settings, "embedder", None) or "use-multilingual"
    return cached_embedder(name, engine) if engine is not None else get_embedder(name)


def _containment(sentence_tokens: list[str], other: set[str]) -> float:
    if not sentence_tokens:
        return 0.0
    return sum(1 for t in sentence_tokens if t in other) / len(sentence_tokens)


def token_f1(a: str, b: str) -> float:
    """Bag-of-stems F1 between two texts."""
    ta, tb = Counter(tokenize(a, stem=True)), Counter(tokenize(b, stem=True))
    common = sum((ta & tb).values())
    if not ta or not tb or not common:
        return 0.0
    p, r = common / sum(ta.values()), common / sum(tb.values())
    return 2 * p * r / (p + r)


@dataclass
class OfflineScore:
    score: float | None
    explanation: str
    details: dict[str, Any] = field(default_factory=dict)
    label: str = OFFLINE_LABEL


class OfflineJudge:
    """Deterministic heuristic judge (see the module docstring). ``offline = True``."""

    offline = True
    label = OFFLINE_LABEL
    name = "offline-heuristic"

    def __init__(self, embedder: Any, *, lang: str = "ru") -> None:
        self.embedder = embedder
        self.lang = lang

    def _t(self, ru: str, en: str) -> str:
        return en if self.lang == "en" else ru

    def _cos(self, a: str, b: str) -> float:
        qa = np.asarray(self.embedder.encode_queries([a]))[0]
        pb = np.asarray(self.embedder.encode_passages([b]))[0]
        return float(np.dot(qa, pb) / ((np.linalg.norm(qa) * np.linalg.norm(pb)) or 1.0))

    def support(self, answer: str, contexts: list[str]) -> list[dict[str, Any]]:
        """Per answer sentence: best context sentence, cosine, lexical containment, supported."""
        a_sents = split_sentences(answer)
        c_sents = [s for c in contexts for s in split_sentences(c)]
        if not a_sents:
            return []
        if not c_sents:
            return [{"sentence": s, "evidence": None, "cosine": 0.0, "containment": 0.0, "supported": False} for s in a_sents]
        A = np.asarray(self.embedder.encode_passages(a_sents), dtype=np.float32)
        C = np.asarray(self.embedder.encode_passages(c_sents), dtype=np.float32)
        sims = A @ C.T
        c_tokens = [set(tokenize(s, stem=True)) for s in c_sents]
        out = []
        for i, s in enumerate(a_sents):
            toks = tokenize(s, stem=True)
            cont = [_containment(toks, ct) for ct in c_tokens]
            j_cos, j_cont = int(np.argmax(sims[i])), int(np.argmax(cont))
            best_cos, best_cont = float(sims[i, j_cos]), float(cont[j_cont])
            supported = best_cont >= SUPPORT_CONTAINMENT or best_cos >= SUPPORT_COSINE
            j = j_cont if best_cont >= SUPPORT_CONTAINMENT else j_cos
            out.append({"sentence": s, "evidence": c_sents[j], "cosine": round(best_cos, 4),
                        "containment": round(best_cont, 4), "supported": supported})
        return out

    def faithfulness(self, answer: str, contexts: list[str]) -> OfflineScore:
        rows = self.support(answer, contexts)
        if not rows:
            return OfflineScore(None, self._t("пустой ответ", "empty answer"), {"sentences": []})
        score = sum(r["supported"] for r in rows) / len(rows)
        unsupported = [r["sentence"] for r in rows if not r["supported"]]
        expl = self._t(
            f"[{OFFLINE_LABEL}] подтверждено контекстом {len(rows) - len(unsupported)} из {len(rows)} предложений",
            f"[{OFFLINE_LABEL}] {len(rows) - len(unsupported)} of {len(rows)} sentences supported by the context",
        )
        if unsupported:
            expl += self._t("; без опоры: ", "; unsupported: ") + " | ".join(u[:120] for u in unsupported[:3])
        return OfflineScore(score, expl, {"sentences": rows})

    def answer_relevance(self, question: str, answer: str) -> OfflineScore:
        if not answer or not answer.strip():
            return OfflineScore(None, self._t("пустой ответ", "empty answer"))
        cos = self._cos(question, answer)
        return OfflineScore(max(0.0, min(1.0, cos)), self._t(
            f"[{OFFLINE_LABEL}] косинус вопрос–ответ {cos:.3f}", f"[{OFFLINE_LABEL}] question–answer cosine {cos:.3f}"),
            {"cosine": cos})

    def answer_correctness(self, answer: str, reference: str) -> OfflineScore:
        if not answer or not answer.strip():
            return OfflineScore(None, self._t("пустой ответ", "empty answer"))
        cos = self._cos(reference, answer)
        f1 = token_f1(answer, reference)
        score = 0.5 * max(0.0, min(1.0, cos)) + 0.5 * f1
        return OfflineScore(score, self._t(
            f"[{OFFLINE_LABEL}] косинус с эталоном {cos:.3f}, F1 по основам слов {f1:.3f}",
            f"[{OFFLINE_LABEL}] cosine to the reference {cos:.3f}, stemmed token F1 {f1:.3f}"),
            {"cosine": cos, "token_f1": f1})

    def e2e(self, question: str, answer: str, reference: str | None, contexts: list[str]) -> OfflineScore:
        parts: dict[str, float | None] = {"answer_relevance": self.answer_relevance(question, answer).score}
        if reference:
            parts["answer_correctness"] = self.answer_correctness(answer, reference).score
        if contexts:
            parts["faithfulness"] = self.faithfulness(answer, contexts).score
        vals = [v for v in parts.values() if v is not None]
        score = sum(vals) / len(vals) if vals else None
        return OfflineScore(score, f"[{OFFLINE_LABEL}] " + ", ".join(
            f"{k}={'—' if v is None else f'{v:.2f}'}" for k, v in parts.items()), parts)

    def show_no_show(self, question: str, context: str, answer: str) -> str:
        """``Yes`` or ``No: <reason>`` (the production verdict format). Without a context (cached answers)
        only the relevance rule applies."""
        with_context = bool(context and context.strip())
        f = self.faithfulness(answer, [context]).score if with_context else 1.0
        r = self.answer_relevance(question, answer).score
        if f is None or r is None:
            return "No: " + self._t("пустой ответ", "empty answer")
        if f < 0.5:
            return "No: " + self._t(f"ответ не опирается на контекст (фактичность {f:.2f})",
                                    f"answer not grounded in the context (faithfulness {f:.2f})")
        if r < 0.3:
            return "No: " + self._t(f"ответ не по вопросу (релевантность {r:.2f})",
                                    f"answer does not address the question (relevance {r:.2f})")
        return "Yes"

    def response_relevancy(self, question: str, answer: str) -> OfflineScore:
        """Offline stand-in: the answer's own sentences play the generated questions."""
        sents = split_sentences(answer)
        if not sents:
            return OfflineScore(None, self._t("пустой ответ", "empty answer"))
        q = np.asarray(self.embedder.encode_queries([question]), dtype=np.float32)[0]
        S = np.asarray(self.embedder.encode_queries(sents), dtype=np.float32)
        sims = S @ q
        score = float(np.clip(sims, 0, 1).mean())
        return OfflineScore(score, self._t(
            f"[{OFFLINE_LABEL}] средний косинус вопроса и предложений ответа {score:.3f}",
            f"[{OFFLINE_LABEL}] mean cosine of the question and the answer's sentences {score:.3f}"),
            {"cosines": [float(x) for x in sims]})


class ExtractiveGenerator:
    """Offline generator: the ``k`` context sentences most similar to the question, in original order."""

    offline = True
    label = OFFLINE_LABEL
    name = "extractive (offline heuristic)"
    model = name

    def __init__(self, embedder: Any, *, k: int = 3) -> None:
        self.embedder = embedder
        self.k = k

    def prompts(self) -> dict[str, str]:
        return {}

    def generate(self, question: str, contexts: list[str], **_: Any) -> Generation:
        t0 = time.perf_counter()
        sents = [s for c in contexts for s in split_sentences(c)]
        if not sents:
            return Generation("", self.name, True, time.perf_counter() - t0, {}, "no context sentences")
        q = np.asarray(self.embedder.encode_queries([question]), dtype=np.float32)[0]
        S = np.asarray(self.embedder.encode_passages(sents), dtype=np.float32)
        sims = S @ q
        top = sorted(np.argsort(-sims, kind="stable")[: self.k].tolist())
        text = " ".join(sents[i] for i in top)
        return Generation(text, self.name, True, time.perf_counter() - t0, {})

    async def agenerate(self, question: str, contexts: list[str], **kwargs: Any) -> Generation:
        return self.generate(question, contexts, **kwargs)

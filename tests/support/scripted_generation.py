"""A scripted LLM for dataset generation: answers the ``gen_*`` prompts from the fragment it is sent.

:class:`GenerationLLM` is a :class:`~tests.support.scripted_openai.ScriptedOpenAI` (real HTTP) whose smart
mode recognises the generation prompts of :mod:`voproshalych_eval.llm.prompts` by their opening words and

* writes a question from content words of the focus sentence (every other word, so it does not copy the
  chunk) and uses the focus sentence as the reference answer;
* with ``defect_every=k`` injects defects so that every gate has something to drop, chosen by a hash of
  the fragment, the focus and the type (the same plan always gets the same defects, whatever the
  concurrency): about one question in ``k`` is defective — one that copies the chunk (``factual``:
  ``verbatim``), an answer the chunk does not support (``paraphrase``, ``follow_up``: ``support``), a
  repeated question (``conditional``, ``multi_chunk``: ``near_duplicate_new``) — and about one
  ``unanswerable`` question in ``k`` is built only from the chunk's words (``answerable``). ``injected``
  counts them;
* with ``misfit_every=k`` about one factual/conditional item in ``k`` gets an answer that does not fit its
  question (``qa_fit``): a chunk sentence sharing no stem with it, or a garbled one;
  ``misfits`` maps each injected answer to its kind;
* answers the faithfulness judge with the share of the answer's stems found in the context, the answer
  relevance judge with 0.9 when answer and question share a stem (else 0.1; only with ``misfit_every``), and the
  answerability check with "answers" when most of the question's content stems are in the fragment.

Everything else falls back to :class:`ScriptedOpenAI`'s smart mode.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from tests.support.scripted_openai import ScriptedOpenAI
from voproshalych_eval.llm.prompts import get_prompt

GEN_TYPES = ("factual", "paraphrase", "multi_chunk", "conditional", "unanswerable", "follow_up")
DUPLICATE_QUESTION = "Где найти расписание занятий на завтра?"
UNSUPPORTED_ANSWER = "Это можно сделать на Луне в любое время суток совершенно бесплатно."
DEFECTS = {"factual": "verbatim", "multi_chunk": "near_duplicate_new", "paraphrase": "support", "follow_up": "support",
           "conditional": "near_duplicate_new"}
_WORD = re.compile(r"\w+", re.UNICODE)
_BLOCK = re.compile(r"<<<\n(.*?)\n>>>", re.S)


def _prefix(name: str, lang: str) -> str:
    return get_prompt(name).template(lang).split("{", 1)[0][:80]


def _content(sentence: str) -> list[str]:
    words = [w for w in _WORD.findall(sentence) if len(w) >= 4 and not w.isdigit()]
    return words or _WORD.findall(sentence) or ["вопрос"]


def _pick(words: list[str], *idx: int) -> list[str]:
    return [words[i % len(words)] for i in idx]


def _stems(text: str) -> list[str]:
    from voproshalych_eval.metrics.text_overlap import tokenize

    return [t for t in tokenize(text, stem=True) if len(t) >= 3]


class GenerationLLM(ScriptedOpenAI):
    """See the module docstring. ``defect_every=0`` (the default) injects no defect."""

    def __init__(self, *args: Any, defect_every: int = 0, misfit_every: int = 0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.defect_every = int(defect_every)
        self.misfit_every = int(misfit_every)
        self.misfits: dict[str, str] = {}  # injected answer -> "garbled" / "misfit"
        self.kinds: dict[str, int] = {}
        self.injected: dict[str, int] = {}
        self._prefixes = {
            (name, lang): _prefix(name, lang)
            for name in (*(f"gen_{t}" for t in GEN_TYPES), "gen_answerability", "faithfulness", "answer_relevance")
            for lang in ("ru", "en")
        }

    def _kind(self, user: str) -> tuple[str | None, str]:
        for (name, lang), pre in self._prefixes.items():
            if user.startswith(pre):
                return name, lang
        return None, "ru"

    def smart_content(self, body: dict[str, Any], echo: str = "") -> str:
        msgs = body.get("messages") or []
        user = next((str(m.get("content", "")) for m in reversed(msgs) if m.get("role") == "user"), "")
        kind, lang = self._kind(user)
        if kind is None:
            return super().smart_content(body, echo=echo)
        with self._lock:
            self.kinds[kind] = self.kinds.get(kind, 0) + 1
        if kind == "faithfulness":
            return json.dumps(self._faithfulness(user, lang), ensure_ascii=False)
        if kind == "answer_relevance":
            return json.dumps(self._relevance(user, lang), ensure_ascii=False)
        if kind == "gen_answerability":
            return json.dumps(self._answerability(user, lang), ensure_ascii=False)
        return json.dumps(self._generate(kind.removeprefix("gen_"), user, lang), ensure_ascii=False)

    # ---------------------------------------------------------------- generation
    def _inject(self, what: str) -> None:
        with self._lock:
            self.injected[what] = self.injected.get(what, 0) + 1

    def _generate(self, qtype: str, user: str, lang: str) -> dict[str, Any]:
        blocks = _BLOCK.findall(user)
        chunk = blocks[0] if blocks else ""
        m = re.search(r"«(.*?)»\n\n", user) if lang == "ru" else re.search(r'fragment: "(.*?)"\n\n', user)
        focus = m.group(1) if m else re.split(r"(?<=[.!?])\s+", chunk.strip())[0]
        d = int(hashlib.sha256(f"{focus}|{chunk[:300]}|{qtype}".encode()).hexdigest()[:8], 16)
        w = _content(focus)
        a, b, c, e = _pick(w, 0, 2, 4, 6)
        answer = focus
        if qtype == "factual":
            q = f"Что нужно знать про {a.lower()} {b.lower()} и {c.lower()}?"
        elif qtype == "conditional":
            q = f"Если речь идёт о {a.lower()} {b.lower()}, то что будет с {c.lower()}?"
        elif qtype == "paraphrase":
            q = f"подскажите плиз {a.lower()} {b.lower()} {c.lower()} эт как вообще"
        elif qtype == "follow_up":
            q = f"а {c.lower()} {e.lower()} тогда как?"
        elif qtype == "multi_chunk":
            other = blocks[1] if len(blocks) > 1 else chunk
            s2 = re.split(r"(?<=[.!?])\s+", other.strip())[0]
            w2 = _content(s2)
            x, y = _pick(w2, 0, 2)
            q = f"Что известно про {a.lower()} {b.lower()} и как это связано с {x.lower()} {y.lower()}?"
            first = re.split(r"(?<=[.!?])\s+", chunk.strip())[0]
            answer = f"{first} {s2}"
        else:  # unanswerable
            if self.defect_every and d % self.defect_every == 1:
                self._inject("answerable")
                q = " ".join(_pick(w, 0, 1, 2, 3)) + "?"  # made of the chunk's own words: the chunk answers it
            else:
                q = f"Можно ли оформить {a.lower()} {b.lower()} через мобильное приложение на Марсе?"
            return {"question": q, "answer": "В базе знаний нет такой информации."}
        if self.defect_every and d % self.defect_every == 1:
            defect = DEFECTS[qtype]
            self._inject(defect)
            if defect == "verbatim":
                q = focus.rstrip(".") + "?"  # copies the chunk
            elif defect == "support":
                answer = UNSUPPORTED_ANSWER
            else:
                q = DUPLICATE_QUESTION
        if self.misfit_every and qtype in ("factual", "conditional") and d % self.misfit_every == 2:
            answer = self._misfit(q, chunk, focus, d)
        out = {"question": q, "answer": answer}
        if qtype == "follow_up":
            out["first_question"] = f"Расскажите про {a.lower()} {b.lower()}"
        return out

    def _misfit(self, question: str, chunk: str, focus: str, d: int) -> str:
        """An answer the chunk supports that does not answer ``question``: a chunk sentence sharing no stem with
        it, or, when every sentence shares one or on every other draw, the focus sentence garbled with Chinese
        characters."""
        q = set(_stems(question))
        sents = [x for x in re.split(r"(?<=[.!?])\s+", chunk.strip()) if x.strip() and x.strip() != focus.strip()]
        best = min(sents, key=lambda x: len(q & set(_stems(x))), default=None)
        if d % 4 == 2 and best is not None and not q & set(_stems(best)):
            answer, kind = best, "misfit"
        else:
            answer, kind = focus + " 支付方式 学生 支付方式 学生", "garbled"
        with self._lock:
            self.misfits[answer] = kind
        self._inject("qa_fit")
        return answer

    # ---------------------------------------------------------------- checks
    def _relevance(self, user: str, lang: str) -> dict[str, Any]:
        """0.9 when the answer shares a stem (3+ letters) with the question, else 0.1 (with ``misfit_every``;
        without it always 0.9, so the other gates' defects reach their own gate)."""
        q_h, a_h, end_h = ("Вопрос:\n", "\n\nОтвет:\n", "\n\nВерни JSON") if lang == "ru" else (
            "Question:\n", "\n\nAnswer:\n", "\n\nReturn JSON")
        q = user.split(q_h, 1)[-1].split(a_h, 1)[0]
        a = user.split(a_h, 1)[-1].split(end_h, 1)[0]
        shared = set(_stems(q)) & set(_stems(a))
        score = 0.9 if shared or not self.misfit_every else 0.1  # without injected misfits every answer fits
        return {"score": score, "explanation": f"scripted: {len(shared)} content stem(s) shared"}

    def _faithfulness(self, user: str, lang: str) -> dict[str, Any]:
        ctx_h, ans_h, end_h = ("Контекст:\n", "\n\nОтвет:\n", "\n\nВерни JSON") if lang == "ru" else (
            "Context:\n", "\n\nAnswer:\n", "\n\nReturn JSON")
        ctx = user.split(ctx_h, 1)[-1].split(ans_h, 1)[0]
        ans = user.split(ans_h, 1)[-1].split(end_h, 1)[0]
        a = _stems(ans)
        cs = set(_stems(ctx))
        score = round(sum(1 for t in a if t in cs) / len(a), 4) if a else 0.0
        return {"score": score, "explanation": f"scripted: {score:.2f} of the answer's stems are in the context"}

    def _answerability(self, user: str, lang: str) -> dict[str, Any]:
        from voproshalych_eval.analytics.text_ru import STOP_WORDS
        from voproshalych_eval.generation.gates import content_containment

        head = "Вопрос пользователя:\n" if lang == "ru" else "User question:\n"
        q = user.split(head, 1)[-1].split("\n\n", 1)[0]
        blocks = _BLOCK.findall(user)
        cont = content_containment(q, blocks[0] if blocks else "", STOP_WORDS)
        return {"answers": cont >= 0.75, "reason": f"scripted: containment {cont:.2f}"}


def _main() -> None:  # pragma: no cover - used by benchmarks: the server in its own process
    import argparse
    import sys
    import time

    ap = argparse.ArgumentParser(description="Run the scripted generation LLM (real HTTP) until killed.")
    ap.add_argument("--delay", type=float, default=0.0)
    ap.add_argument("--defect-every", type=int, default=0)
    a = ap.parse_args()
    with GenerationLLM(delay=a.delay, defect_every=a.defect_every) as srv:
        print(srv.base_url, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            sys.exit(0)


if __name__ == "__main__":  # pragma: no cover
    _main()

"""Quality gates of generated items: pure functions with their formulas (no I/O).

Every generated candidate passes these before it is kept; each drop is counted per gate in the run's
report (:data:`GATES`).

* ``well_formed`` — a self-contained student question, not a model's words around one: a leading preamble
  ("Вот несколько вопросов, которые могут быть заданы студентом:", "Here are some questions:") and list
  markers or quotes are parsed out first (:func:`strip_preamble`); what remains (and, for a follow-up, its
  first question) must be a question (:func:`well_formed_question`): not empty, at least two words, not a
  preamble, not a request for an answer ("Ваш ответ на вопрос о …?"), not a heading ending with a colon.
* ``verbatim`` — the question must not copy its chunk: :func:`verbatim_overlap` is the longest run of
  consecutive question tokens that occurs, in the same order, in the chunk, divided by the number of
  question tokens (lower-case Unicode word tokens); dropped when ``>= threshold`` (default 0.8).
* ``support`` — the reference answer must be supported by its chunk(s): the judge's faithfulness of
  the answer against the source chunks (an LLM judge, or offline the labelled heuristic of
  :class:`voproshalych_eval.llm.offline.OfflineJudge`); dropped below ``threshold`` (default 0.7).
* ``qa_fit`` — the reference answer must answer its question: a garbled answer is refused first
  (:func:`garbled_answer`: characters of no Cyrillic/Latin script, or one token repeated over and over); then
  the judge's ``answer_relevance`` of the answer to the question (for a follow-up, the first question and the
  follow-up) must be ``>= threshold`` (default 0.5); an LLM judge, or offline the labelled heuristic
  (question–answer cosine of the offline embedder, on its own scale: ``qa_fit_offline``, default 0.2 — the
  template generator's fitting items score 0.2–0.85 there). Not applied to ``unanswerable`` items (their answer says the base has none).
* ``answerable`` — an ``unanswerable`` question must not be answered by the knowledge base: its
  nearest chunks are checked (an LLM yes/no check, or offline :func:`answered_offline`); dropped when
  any of them answers it.
* ``near_duplicate`` — :func:`near_duplicates`: questions whose embedding cosine to an earlier kept
  question of the new set (``near_duplicate_new``) or to any question of the existing golden sets
  (``near_duplicate_existing``) is ``>= threshold`` (default 0.92) are dropped, first come first kept.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from voproshalych_eval.generation.sampling import largest_remainder
from voproshalych_eval.metrics.text_overlap import tokenize

GATES = ("generation", "well_formed", "verbatim", "support", "qa_fit", "answerable", "near_duplicate_new",
         "near_duplicate_existing")
DEFAULT_THRESHOLDS = {"verbatim": 0.8, "support": 0.7, "qa_fit": 0.5, "qa_fit_offline": 0.2, "near_duplicate": 0.92}
#: gates with a threshold on a recorded value, and the side that passes: ``below`` (value < threshold) or ``at_least``
THRESHOLD_GATES = {"verbatim": "below", "support": "at_least", "qa_fit": "at_least"}

#: a garbled answer: more than this share of its letters outside Cyrillic/Latin (a 1.5B model slipping into CJK),
#: or its most frequent token more than this share of at least 8 tokens
GARBLED_FOREIGN_SHARE = 0.05
GARBLED_REPEAT_SHARE = 0.4

#: offline answerability: share of the question's content stems found in a chunk, and the cosine
ANSWERED_CONTAINMENT = 0.75
ANSWERED_COSINE = 0.6


_PREAMBLE = re.compile(
    r"^(вот|ниже|конечно|разумеется|пример[ыа]?|возможные|here (?:are|is)|sure|below|certainly)\b.*?(?::|$)",
    re.IGNORECASE)
_INTRO = re.compile(r"(вопрос\w*|questions?)\b[^?]*?(которые|that|студент\w*|students?)", re.IGNORECASE)
_ASKS_ANSWER = re.compile(r"^(ваш|твой|ваш\w*)\s+ответ\b|^(ответ|answer)\s*:|^your answer\b", re.IGNORECASE)
_MARKER = re.compile(r"^\s*(?:[-*•]|\d+[.)]|вопрос\s*\d*\s*:|question\s*\d*\s*:)\s*", re.IGNORECASE)


def _is_preamble(line: str) -> bool:
    text = line.strip()
    if not text:
        return True
    if text.endswith(":"):
        return True
    if text.endswith("?"):  # a question, even one opening with "Вот" ("Вот где деканат?")
        return False
    return bool(_PREAMBLE.match(text)) or (bool(_INTRO.search(text)) and ":" in text)


def strip_preamble(text: str) -> str:
    """``text`` without a model's preamble: leading lines that introduce instead of ask ("Вот несколько вопросов,
    которые могут быть заданы студентом:"), an introduction before a colon on the question's own line
    ("Вот вопрос: Когда сессия?" -> "Когда сессия?"), list markers ("1.", "-") and surrounding quotes.
    Empty when nothing but a preamble is left."""
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    while lines and _is_preamble(lines[0]):
        lines.pop(0)
    if not lines:
        return ""
    out = " ".join(lines)
    head, sep, rest = out.partition(":")
    if sep and rest.strip() and (_PREAMBLE.match(head.strip()) or _INTRO.search(head)):
        out = rest
    out = _MARKER.sub("", out.strip())
    return out.strip().strip("«»\"'“”„").strip()


def well_formed_question(question: str) -> tuple[bool, str | None]:
    """``(True, None)`` for a self-contained question; else ``(False, reason)``: ``empty``, ``preamble``,
    ``asks_for_an_answer``, ``too_short`` (fewer than two word tokens)."""
    q = (question or "").strip()
    if not q:
        return False, "empty"
    if _is_preamble(q):
        return False, "preamble"
    if _ASKS_ANSWER.match(q):
        return False, "asks_for_an_answer"
    if len(tokenize(q)) < 2:
        return False, "too_short"
    return True, None


_LETTER = re.compile(r"[^\W\d_]", re.UNICODE)
_OWN_SCRIPT = re.compile(r"[A-Za-zА-Яа-яЁё]")


def garbled_answer(answer: str) -> str | None:
    """Why ``answer`` is garbled, or None: ``foreign_script`` when more than :data:`GARBLED_FOREIGN_SHARE` of its
    letters are neither Cyrillic nor Latin; ``repetition`` when it has at least 8 word tokens and the most
    frequent one makes more than :data:`GARBLED_REPEAT_SHARE` of them. Example: ``"оплата 支付 支付"`` has 10
    letters, 4 of them CJK: 4/10 > 0.05 -> ``foreign_script``."""
    letters = _LETTER.findall(answer or "")
    if letters:
        foreign = sum(1 for ch in letters if not _OWN_SCRIPT.match(ch))
        if foreign / len(letters) > GARBLED_FOREIGN_SHARE:
            return "foreign_script"
    toks = tokenize(answer or "")
    if len(toks) >= 8:
        top = max(toks.count(t) for t in set(toks))
        if top / len(toks) > GARBLED_REPEAT_SHARE:
            return "repetition"
    return None


def gate_passes(gate: str, value: float, threshold: float) -> bool:
    """The verdict of a threshold gate (:data:`THRESHOLD_GATES`) on a value: ``value < threshold`` for ``below``
    gates (verbatim), ``value >= threshold`` for ``at_least`` gates (support, qa_fit)."""
    side = THRESHOLD_GATES[gate]
    return value < threshold if side == "below" else value >= threshold


def verbatim_overlap(question: str, chunk: str) -> float:
    """Longest contiguous run of question tokens found in order in ``chunk`` / number of question tokens.

    ``0.0`` for an empty question. Example: question ``"a b c d"``, chunk ``"x a b c y"`` -> ``3 / 4``.
    """
    q = tokenize(question or "")
    if not q:
        return 0.0
    c = tokenize(chunk or "")
    if not c:
        return 0.0
    # longest common substring on token sequences (dynamic programming, O(len(q) * len(c)))
    best = 0
    prev = [0] * (len(c) + 1)
    for i in range(1, len(q) + 1):
        cur = [0] * (len(c) + 1)
        qi = q[i - 1]
        for j in range(1, len(c) + 1):
            if qi == c[j - 1]:
                cur[j] = prev[j - 1] + 1
                if cur[j] > best:
                    best = cur[j]
        prev = cur
    return best / len(q)


def content_containment(question: str, chunk: str, stop_words: frozenset[str] | set[str] = frozenset()) -> float:
    """Share of the question's content stems (stemmed tokens not in ``stop_words``) present in ``chunk``.

    ``0.0`` when the question has no content token.
    """
    q = [t for t in tokenize(question or "") if t not in stop_words]
    if not q:
        return 0.0
    qs = tokenize(" ".join(q), stem=True)
    cs = set(tokenize(chunk or "", stem=True))
    return sum(1 for t in qs if t in cs) / len(qs)


def answered_offline(containment: float, cosine: float) -> bool:
    """Offline heuristic: a chunk answers a question when ``containment >= 0.75`` and ``cosine >= 0.6``."""
    return containment >= ANSWERED_CONTAINMENT and cosine >= ANSWERED_COSINE


@dataclass(frozen=True)
class DuplicateOf:
    """Why an item was dropped as a near-duplicate: of item ``index`` of the new set, or of an existing one."""

    index: int
    existing: bool
    cosine: float


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    if x.ndim != 2:
        raise ValueError(f"expected a 2-d array of vectors, got shape {x.shape}")
    n = np.linalg.norm(x, axis=1, keepdims=True)
    n[n == 0] = 1.0
    return x / n


def near_duplicates(
    vectors: np.ndarray,
    *,
    threshold: float,
    existing: np.ndarray | None = None,
) -> list[DuplicateOf | None]:
    """Greedy near-duplicate filter, in order: item ``i`` is dropped (``DuplicateOf``) when its cosine to an
    existing vector, or to an earlier *kept* item, is ``>= threshold``; else ``None`` (kept).

    Cosine = ``a·b / (|a| |b|)``. Checking existing sets first means an item equal to both an existing
    question and an earlier new one is reported as a duplicate of the existing one.
    """
    if not 0.0 < threshold <= 1.0:
        raise ValueError("threshold must be in (0, 1]")
    v = _unit(vectors) if len(vectors) else np.zeros((0, 0), dtype=np.float32)
    out: list[DuplicateOf | None] = [None] * len(v)
    if len(v) == 0:
        return out
    if existing is not None and len(existing):
        e = _unit(existing)
        if e.shape[1] != v.shape[1]:
            raise ValueError(f"existing vectors are {e.shape[1]}-d, new ones {v.shape[1]}-d")
        sims = v @ e.T
        j = np.argmax(sims, axis=1)
        best = sims[np.arange(len(v)), j]
        for i in np.nonzero(best >= threshold)[0]:
            out[int(i)] = DuplicateOf(int(j[i]), True, float(best[i]))
    kept: list[int] = []
    for i in range(len(v)):
        if out[i] is not None:
            continue
        if kept:
            sims = v[kept] @ v[i]
            k = int(np.argmax(sims))
            if sims[k] >= threshold:
                out[i] = DuplicateOf(kept[k], False, float(sims[k]))
                continue
        kept.append(i)
    return out


def max_pairwise_cosine(vectors: np.ndarray) -> float:
    """Largest cosine between two different rows (``-1.0`` for fewer than two rows); a check for tests and reports."""
    if len(vectors) < 2:
        return -1.0
    v = _unit(vectors)
    s = v @ v.T
    np.fill_diagonal(s, -np.inf)
    return float(s.max())


def select_kept(
    candidates: Sequence[tuple[str, str, bool, Sequence[str]]],
    *,
    size: int,
    mix: dict[str, float],
) -> list[str]:
    """Choose at most ``size`` item keys from kept candidates ``(key, question_type, spare, pages)``.

    Quotas per type are the largest-remainder rounding of ``size`` over ``mix``; ``pages`` are the pages an
    item covers (its relevant URLs; empty for unanswerable items). Three passes, candidates in plan order
    with non-spares first: (1) cover every page once — the pages with the fewest candidates first, each
    taking its first candidate whose type has quota left (the type with the most quota left wins a tie);
    (2) fill each type's quota; (3) fill leftover capacity from any type (when a type has too few
    candidates). Returns the chosen keys in plan order.
    """
    quota = dict(zip(mix, largest_remainder(size, mix), strict=True))
    ordered = sorted(candidates, key=lambda c: (c[2], c[0]))  # non-spares first, then by key (plan order)
    chosen: list[str] = []
    taken: set[str] = set()
    covered: set[str] = set()
    by_page: dict[str, list[tuple[str, str, bool, Sequence[str]]]] = {}
    for c in ordered:
        for pg in c[3]:
            by_page.setdefault(pg, []).append(c)
    for pg in sorted(by_page, key=lambda x: (len(by_page[x]), x)):
        if pg in covered or len(chosen) >= size:
            continue
        options = [c for c in by_page[pg] if c[0] not in taken and quota.get(c[1], 0) > 0]
        if not options:
            continue
        best = max(options, key=lambda c: (quota[c[1]], -ordered.index(c)))
        quota[best[1]] -= 1
        chosen.append(best[0])
        taken.add(best[0])
        covered.update(best[3])
    for key, qtype, _spare, _pages in ordered:
        if key not in taken and quota.get(qtype, 0) > 0 and len(chosen) < size:
            quota[qtype] -= 1
            chosen.append(key)
            taken.add(key)
    for key, _qtype, _spare, _pages in ordered:
        if len(chosen) >= size:
            break
        if key not in taken:
            chosen.append(key)
            taken.add(key)
    return sorted(chosen[:size])

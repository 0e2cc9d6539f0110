r"""Lexical overlap between a generated answer and the reference answer: ROUGE, BLEU, chrF.

Russian text needs care: ``rouge_score``'s default tokenizer keeps only ``[a-z0-9]`` and so
drops every Cyrillic letter - two identical Russian answers scored 0 in the earlier benchmark.
Here ROUGE always uses :func:`tokenize` (Unicode word tokens, lower case, ``ё`` -> ``е``, optional
Russian Snowball stemming). BLEU and chrF use ``sacrebleu``'s own standard processing (see each
function).

ROUGE-N (n-gram overlap, ``count_H``/``count_R`` = n-gram counts in hypothesis/reference):

.. math::
    P_N = \frac{\sum_g \min(\text{count}_H(g), \text{count}_R(g))}{\sum_g \text{count}_H(g)},\quad
    R_N = \frac{\sum_g \min(\text{count}_H(g), \text{count}_R(g))}{\sum_g \text{count}_R(g)},\quad
    F_N = \frac{2 P_N R_N}{P_N + R_N}

ROUGE-L replaces the overlap count with the length of the longest common subsequence of tokens.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

__all__ = ["ROUGE_TYPES", "bleu", "chrf", "corpus_bleu", "rouge_scores", "stem_words", "tokenize"]

ROUGE_TYPES: tuple[str, ...] = ("rouge1", "rouge2", "rougeL")

_WORD_RE = re.compile(r"\w+", re.UNICODE)


class _LockedStemmer:
    """A Snowball stemmer guarded by a lock (Snowball stemmer objects keep per-call state)."""

    def __init__(self, language: str) -> None:
        import snowballstemmer  # heavy: defers snowballstemmer

        self._stemmer = snowballstemmer.stemmer(language)
        self._lock = threading.Lock()

    def stem_words(self, words: list[str]) -> list[str]:
        with self._lock:
            return list(self._stemmer.stemWords(words))


@lru_cache(maxsize=4)
def _stemmer(language: str = "russian") -> _LockedStemmer:
    return _LockedStemmer(language)


def stem_words(words: list[str], language: str = "russian") -> list[str]:
    """Snowball stems of ``words`` — the project's one stemmer (lexical metrics and the analytics' terms);
    safe to call from several threads."""
    return _stemmer(language).stem_words(words)


def tokenize(text: str, *, stem: bool = False) -> list[str]:
    """Split text into lower-case Unicode word tokens.

    Steps: lower-case; ``ё`` -> ``е``; tokens are maximal runs of ``\\w`` (letters of any script,
    digits, underscore), punctuation dropped; with ``stem=True`` each token is reduced with the
    Russian Snowball stemmer (``стипендии``/``стипендия`` -> ``стипенд``; Latin tokens pass
    through essentially unchanged).
    """
    tokens = _WORD_RE.findall(text.lower().replace("ё", "е"))
    if stem and tokens:
        tokens = _stemmer("russian").stem_words(tokens)
    return tokens


class _Tokenizer:
    """Adapter with the ``.tokenize(text)`` method ``rouge_score`` expects."""

    def __init__(self, *, stem: bool) -> None:
        self.stem = stem

    def tokenize(self, text: str) -> list[str]:
        return tokenize(text, stem=self.stem)


@lru_cache(maxsize=2)
def _rouge_scorer(stem: bool) -> Any:
    from rouge_score import rouge_scorer  # heavy: defers sklearn (via rouge_score)

    return rouge_scorer.RougeScorer(list(ROUGE_TYPES), tokenizer=_Tokenizer(stem=stem))


def rouge_scores(prediction: str, reference: str, *, stem: bool = False) -> dict[str, float]:
    """ROUGE-1, ROUGE-2 and ROUGE-L of ``prediction`` against ``reference`` on :func:`tokenize` tokens.

    Returns the keys ``rouge1_p, rouge1_r, rouge1_f, rouge2_p, rouge2_r, rouge2_f, rougeL_p,
    rougeL_r, rougeL_f`` (precision, recall, F-measure), each in [0, 1]. If either text has no
    token, every score is 0.0. Identical texts score 1.0 whatever the script.
    """
    keys = [f"{t}_{s}" for t in ROUGE_TYPES for s in ("p", "r", "f")]
    if not tokenize(prediction) or not tokenize(reference):
        return dict.fromkeys(keys, 0.0)
    # rouge_score's signature is score(target, prediction): the reference comes first.
    scores = _rouge_scorer(stem).score(reference, prediction)
    out: dict[str, float] = {}
    for rouge_type in ROUGE_TYPES:
        s = scores[rouge_type]
        out[f"{rouge_type}_p"] = float(s.precision)
        out[f"{rouge_type}_r"] = float(s.recall)
        out[f"{rouge_type}_f"] = float(s.fmeasure)
    return out


def bleu(prediction: str, reference: str, *, lowercase: bool = False) -> float:
    r"""Sentence-level BLEU (``sacrebleu.sentence_bleu``), on the 0-100 scale.

    .. math:: \text{BLEU} = 100 \cdot \text{BP} \cdot \exp\Big(\sum_{n=1}^{4} \tfrac14 \log p_n\Big),\quad
              \text{BP} = \min(1, e^{1 - r/h})

    with :math:`p_n` the clipped n-gram precisions, :math:`h`/:math:`r` hypothesis/reference
    lengths. Uses sacrebleu's ``"intl"`` tokenizer (Unicode-aware: splits punctuation of any script,
    keeps Cyrillic words whole), its default ``exp`` smoothing and effective n-gram order for short
    sentences, and is case-sensitive unless ``lowercase=True``. Empty prediction -> 0.0.
    Identical non-empty texts -> 100.0.
    """
    import sacrebleu  # heavy: defers sacrebleu

    if not prediction.strip() or not reference.strip():
        return 0.0
    score = sacrebleu.sentence_bleu(prediction, [reference], tokenize="intl", lowercase=lowercase).score
    return float(min(100.0, max(0.0, score)))


def corpus_bleu(predictions: Sequence[str], references: Sequence[str], *, lowercase: bool = False) -> float:
    r"""Corpus-level BLEU (``sacrebleu.corpus_bleu``), on the 0-100 scale — the number the methodology's reading
    bands are about ("BLEU > 50 very good, 20–40 acceptable, < 20 needs improvement").

    .. math:: \text{BLEU} = 100 \cdot \text{BP} \cdot \exp\Big(\sum_{n=1}^{4} \tfrac14 \log p_n\Big),\quad
              p_n = \frac{\sum_i \text{clipped}_n(i)}{\sum_i \text{total}_n(i)},\quad
              \text{BP} = \min(1, e^{1 - R/H})

    The n-gram matches and the lengths are summed over ALL items before the precisions are taken, so
    it is not the mean of :func:`bleu` over items (three items can give 38.5 here and a mean sentence
    BLEU of 7.6). Same tokenizer (``"intl"``) as :func:`bleu`. An empty prediction contributes no
    n-gram and its length to nothing but the reference side (it lowers the score, as it should).
    Raises ``ValueError`` for no items or mismatched lengths.

    >>> corpus_bleu(["стипендия 25 числа каждого месяца"], ["стипендия 25 числа каждого месяца"])
    100.0
    """
    import sacrebleu  # heavy: defers sacrebleu

    # heavy: defers numpy (via metrics.validation)
    from voproshalych_eval.metrics.validation import check_consistent_length

    if check_consistent_length(("predictions", predictions), ("references", references)) == 0:
        raise ValueError("corpus_bleu needs at least one item")
    score = sacrebleu.corpus_bleu(list(predictions), [list(references)], tokenize="intl", lowercase=lowercase).score
    return float(min(100.0, max(0.0, score)))


def chrf(prediction: str, reference: str) -> float:
    """Sentence-level chrF (``sacrebleu.sentence_chrf``, character 6-grams, beta = 2), 0-100.

    Character-based, so it needs no tokenizer and is robust to Russian inflection. Empty -> 0.0.
    """
    import sacrebleu  # heavy: defers sacrebleu

    if not prediction.strip() or not reference.strip():
        return 0.0
    score = sacrebleu.sentence_chrf(prediction, [reference]).score
    return float(min(100.0, max(0.0, score)))

"""Readable topic names: BERTopic's representation method over Russian lemmas, and optional LLM labels.

The topics come from our KMeans (:mod:`voproshalych_eval.analytics.topics`); this module only builds their
representation, with the method of BERTopic (Grootendorst, 2022) computed on scikit-learn directly:

* terms: ``CountVectorizer`` over pymorphy3 lemmas, the maintained stop-word lists and the domain's filler
  removed (:func:`text_ru.topic_terms`, the project's one Russian lemmatiser);
* class-based TF-IDF (:func:`class_tfidf`): ``w(t, c) = tf(t, c) / |c| · log(1 + A / f(t))`` (``tf(t, c)``
  the count of term ``t`` in topic ``c``, ``|c|`` the topic's term count, ``A`` the mean term count per topic,
  ``f(t)`` the count of ``t`` in all topics) — *distinctiveness*: a word frequent in this topic and rare
  elsewhere; the 30 best words of a topic are its candidates;
* characteristic terms (:func:`_characteristic`): a word must occur in at least ``max(2, min_doc_share ·
  docs)`` distinct questions of the topic; proper nouns, Latin and out-of-dictionary tokens — names,
  ``print``, abbreviations, typos — are kept only when at least ``concentration`` of their questions lie in
  this topic, i.e. they characterise it;
* maximal marginal relevance (:func:`_mmr`) — *diversity*: the next keyword is the one with the highest
  c-TF-IDF weight and the least similarity to the keywords already chosen
  (``argmax_w (1 − λ)·w̃(w) − λ·max_k cos(e_w, e_k)``, ``w̃`` the weight scaled by the topic's largest,
  ``e`` the embedder's word vectors, ``λ`` = ``diversity``).

Until this round the same steps ran through the ``bertopic`` package ("manual BERTopic" with our clusters
and our two representation models). Importing it pulled torch, transformers and umap and cost about a third
of every topics click (profiled), while the only part it computed was the c-TF-IDF above. The keywords
are the same (checked on the demo log at k = 12 and 25: identical with MMR; without an embedder, words of
exactly equal weight are now ordered alphabetically, where BERTopic's order depended on its sparse layout).

Every distinct normalised question counts once, so one question repeated 50 times cannot name a topic.

LLM labels (:func:`llm_labels`): with an LLM configured, a short human-style label per topic from its
keywords and examples (prompt ``topic_label``; answers cached by the LLM client), shown as LLM-written.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from voproshalych_eval.analytics import text_ru
from voproshalych_eval.llm.prompts import render

log = logging.getLogger(__name__)

DEFAULT_DIVERSITY = 0.3
DEFAULT_MIN_DOC_SHARE = 0.03
DEFAULT_CONCENTRATION = 0.5


@dataclass
class TopicTerms:
    """Keywords of one topic (best first) with their weights and token kinds."""

    terms: list[str]
    weights: list[float]
    kinds: list[str] = field(default_factory=list)

    def name(self, n: int) -> str:
        return ", ".join(self.terms[:n])


def _analyzer(slang: text_ru.SlangNormalizer | None, filler: frozenset[str]) -> Callable[[str], list[str]]:
    def analyze(doc: str) -> list[str]:
        return text_ru.topic_terms(doc, slang=slang, filler=filler)

    return analyze


TOP_CANDIDATES = 30
"""Candidate words per topic taken from the c-TF-IDF ranking before the filters (at least ``n_terms``)."""


def class_tfidf(counts: Any) -> Any:
    """Class-based TF-IDF of a topic × term count matrix (sparse), BERTopic's c-TF-IDF.

    ``w(t, c) = tf(t, c) / |c| · log(1 + A / f(t))`` with ``tf(t, c)`` the count of term ``t`` in topic ``c``,
    ``|c|`` the topic's term count, ``A`` the mean term count per topic (truncated to an integer, as BERTopic
    does) and ``f(t)`` the count of ``t`` over all topics. Returns a CSR matrix of the same shape.
    """
    import scipy.sparse as sp  # heavy: defers scipy
    from sklearn.preprocessing import normalize  # heavy: defers sklearn

    X = sp.csr_matrix(counts, dtype=np.float64)
    df = np.asarray(X.sum(axis=0)).ravel()
    avg = int(np.asarray(X.sum(axis=1)).mean()) if X.shape[0] else 0
    idf = np.log(avg / np.where(df > 0, df, 1.0) + 1.0)
    return sp.csr_matrix(normalize(X, axis=1, norm="l1") @ sp.diags(idf, format="csr"))


def _top_words(row: Any, words: np.ndarray, n: int) -> list[tuple[str, float]]:
    """The ``n`` best-weighted words of one sparse row, best first, equal weights in alphabetical order (a
    stated rule: BERTopic's order of equal weights depends on its sparse layout)."""
    data, cols = row.data, row.indices
    keep = data > 0
    data, cols = data[keep], cols[keep]
    order = np.lexsort((words[cols], -data))[:n]
    return [(str(words[cols[i]]), float(data[i])) for i in order]


def _characteristic(candidates: list[tuple[str, float]], doc_freq: Counter[str], overall: Counter[str], n_docs: int,
                    *, min_doc_share: float, concentration: float) -> list[tuple[str, float]]:
    """Candidate words supported by enough distinct questions of the topic; proper nouns, Latin and unknown
    tokens only when they concentrate in the topic (see the module docstring)."""
    need = max(2, int(np.ceil(min_doc_share * n_docs)))
    kept = []
    for word, score in candidates:
        if not word or doc_freq[word] < need:
            continue
        if text_ru.token_kind(word) != "word" and doc_freq[word] < concentration * overall[word]:
            continue
        kept.append((word, score))
    return kept or [("", 1e-5)]


def _mmr(words: list[tuple[str, float]], embedder: Any, *, diversity: float, top_n_words: int) -> list[tuple[str, float]]:
    """Maximal marginal relevance with the c-TF-IDF weight as relevance.

    ``next = argmax_w (1 − λ)·w(t, c)/max_w w(t, c) − λ·max_{k chosen} cos(e_w, e_k)`` with ``λ`` =
    ``diversity`` and ``e`` the embedder's word vectors. BERTopic's own ``MaximalMarginalRelevance`` takes the
    cosine between a word and the embedding of all candidate words joined as relevance; with sentence
    embedders on single Russian words that pushed the distinctive words out of the names ("физкультура,
    ходить, освобождение" instead of "физкультура, зачет, отработать"), so the c-TF-IDF ranking stays the
    relevance and the embeddings only keep near-synonyms (``пересдача``/``пересдать``) from filling a name.
    """
    words = [(w, float(sc)) for w, sc in words if w]
    if len(words) <= 1 or embedder is None:
        return words[:top_n_words]
    E = np.asarray(embedder.encode_queries([w for w, _ in words]), dtype=np.float64)
    E /= np.maximum(np.linalg.norm(E, axis=1, keepdims=True), 1e-12)
    rel = np.asarray([sc for _, sc in words]) / max(words[0][1], 1e-12)
    chosen = [0]
    rest = list(range(1, len(words)))
    while rest and len(chosen) < top_n_words:
        sim = (E[rest] @ E[chosen].T).max(axis=1)
        score = (1 - diversity) * rel[rest] - diversity * sim
        chosen.append(rest.pop(int(np.argmax(score))))
    return [words[i] for i in chosen]


def name_topics(
    docs: Sequence[str],
    labels: np.ndarray,
    embeddings: np.ndarray,
    *,
    embedder: Any | None = None,
    n_terms: int = 10,
    diversity: float = DEFAULT_DIVERSITY,
    min_doc_share: float = DEFAULT_MIN_DOC_SHARE,
    concentration: float = DEFAULT_CONCENTRATION,
    slang: text_ru.SlangNormalizer | None = None,
    filler: frozenset[str] = text_ru.FILLER_WORDS,
) -> dict[int, TopicTerms]:
    """Keywords of every topic ``labels`` (``>= 0``) over the distinct ``docs`` (module docstring).

    ``embeddings`` are the documents' vectors (aligned with ``docs``; checked, kept for the signature's
    contract); ``embedder`` embeds candidate words for MMR — without one, the keywords are the c-TF-IDF
    ranking after the characteristic-terms filter.
    """
    from sklearn.feature_extraction.text import CountVectorizer  # heavy: defers sklearn

    labels = np.asarray(labels, dtype=np.int64)
    if len(docs) != len(labels) or len(docs) != embeddings.shape[0]:
        raise ValueError(f"{len(docs)} documents, {len(labels)} labels, {embeddings.shape[0]} embeddings")
    keep = labels >= 0
    docs_k = [str(d) for d, k in zip(docs, keep, strict=True) if k]
    y = labels[keep]
    if not docs_k:
        return {}
    analyzer = _analyzer(slang, filler)
    analysed = [analyzer(d) for d in docs_k]
    topics = sorted(set(y.tolist()))
    if not any(analysed):
        return {int(t): TopicTerms([], []) for t in topics}
    # one "document" per topic: the lemmas of its questions (tabs/newlines never matter: the analyzer splits words)
    per_topic: dict[int, list[str]] = {t: [] for t in topics}
    doc_freq: dict[int, Counter[str]] = {t: Counter() for t in topics}
    for t, terms in zip(y.tolist(), analysed, strict=True):
        per_topic[t].extend(terms)
        doc_freq[t].update(set(terms))
    vectorizer = CountVectorizer(analyzer=lambda terms: terms)
    counts = vectorizer.fit_transform([per_topic[t] for t in topics])
    words = vectorizer.get_feature_names_out()
    weights = class_tfidf(counts)
    overall: Counter[str] = Counter()
    for c in doc_freq.values():
        overall.update(c)
    n_docs = Counter(y.tolist())
    out: dict[int, TopicTerms] = {}
    for row, t in enumerate(topics):
        candidates = _top_words(weights.getrow(row), words, max(n_terms, TOP_CANDIDATES))
        kept = _characteristic(candidates, doc_freq[t], overall, n_docs[t], min_doc_share=min_doc_share,
                               concentration=concentration)
        chosen = _mmr(kept, embedder, diversity=diversity, top_n_words=n_terms) if embedder is not None else kept
        chosen = [(w, s) for w, s in chosen if w][:n_terms]
        out[int(t)] = TopicTerms([w for w, _ in chosen], [s for _, s in chosen], [text_ru.token_kind(w) for w, _ in chosen])
    return out


# ---------------------------------------------------------------------------------------------
# keyphrases: a name a product owner reads (offline)
# ---------------------------------------------------------------------------------------------

#: an adjective + noun pair must occur in at least this many distinct questions of the topic to name it
MIN_PHRASE_DOCS = 2
#: words of a shortened central question
CENTRAL_QUESTION_WORDS = 6


def keyphrase(questions: Sequence[str], keywords: Sequence[str], *, top: int = 6) -> tuple[str, str] | None:
    """A short Russian name of a topic and how it was made: ``(name, "phrase")`` — the adjective + noun pair
    (agreed by pymorphy3: ``социальная стипендия``) whose noun is one of the topic's ``top`` keywords and which
    occurs adjacent in the most distinct questions (at least :data:`MIN_PHRASE_DOCS`; a pair whose adjective is
    a keyword too wins ties) — else ``(name, "question")``: the most central question (``questions[0]``)
    shortened to :data:`CENTRAL_QUESTION_WORDS` words; None without questions."""
    best_words = [w for w in keywords[:top] if w]
    pairs: Counter[tuple[str, str]] = Counter()
    for q in dict.fromkeys(str(x) for x in questions):
        seen: set[tuple[str, str]] = set()
        tagged = [text_ru.part_of_speech(t) for t in text_ru.tokenize(q)]
        for (a, pa), (b, pb) in zip(tagged, tagged[1:], strict=False):
            if pa == "ADJF" and pb == "NOUN" and b in best_words:
                seen.add((a, b))
        pairs.update(seen)
    ranked = sorted(((n + (0.5 if a in best_words else 0.0), -best_words.index(b), a, b) for (a, b), n in pairs.items()
                     if n >= MIN_PHRASE_DOCS), reverse=True)
    for _, _, a, b in ranked:
        phrase = text_ru.agreed_phrase(a, b)
        if phrase:
            return phrase[:1].upper() + phrase[1:], "phrase"
    if not questions:
        return None
    words = str(questions[0]).strip().rstrip("?!.").split()
    short = " ".join(words[:CENTRAL_QUESTION_WORDS]) + ("…" if len(words) > CENTRAL_QUESTION_WORDS else "")
    return (short[:1].upper() + short[1:], "question") if short else None


# ---------------------------------------------------------------------------------------------
# optional LLM labels
# ---------------------------------------------------------------------------------------------


def llm_labels(
    topics: pd.DataFrame,
    client: Any,
    *,
    model: str | None = None,
    lang: str = "ru",
    n_examples: int = 5,
    progress: Callable[[int, int], None] | None = None,
) -> dict[int, str]:
    """A short human-style label per clustered topic (``topic`` → label) written by an LLM from the topic's
    keywords and examples (prompt ``topic_label``). Answers are cached by the LLM client (same keywords and
    examples → no new call). Failures leave the topic out (the keyword name stays). ``progress(done, total)``
    after each topic (a progress bar)."""
    model = model or (client.models[0] if client.models else None)
    if model is None:
        return {}
    rows = topics[topics["kind"] == "cluster"]
    out: dict[int, str] = {}
    for done, (_, r) in enumerate(rows.iterrows()):
        if progress is not None:
            progress(done, len(rows))
        examples = "\n".join(f"- {e}" for e in list(r["examples"])[:n_examples])
        prompt = render("topic_label", lang=lang, keywords=", ".join(r["terms"]) or "—", examples=examples)
        try:
            resp = client.complete([{"role": "user", "content": prompt}], model=model, temperature=0.0, max_tokens=40,
                                   purpose="topic_label")
        except Exception as exc:  # noqa: BLE001 - one failed label must not stop the others
            log.warning("topic label for topic %s failed: %s", r["topic"], exc)
            continue
        label = " ".join(str(resp.text or "").strip().strip("«»\"'.").split())[:80]
        if label:
            out[int(r["topic"])] = label
    return out

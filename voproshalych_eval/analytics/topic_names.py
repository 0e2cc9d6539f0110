"""Readable topic names: BERTopic's representation pipeline over Russian lemmas, and optional LLM labels.

Choice: **BERTopic** (``bertopic``), used as "manual BERTopic" — the topics come from our KMeans
(:mod:`voproshalych_eval.analytics.topics`), BERTopic only builds their representation:

* ``umap_model = BaseDimensionalityReduction()`` and ``hdbscan_model = BaseCluster()`` with ``y = labels``:
  no second reduction or clustering, the precomputed embeddings are used as they are;
* ``vectorizer_model = CountVectorizer(analyzer=text_ru.topic_terms)``: pymorphy3 lemmas, the maintained
  stop-word lists and the domain's filler removed (the project's one Russian lemmatiser);
* ``ctfidf_model = ClassTfidfTransformer()``: class-based TF-IDF
  ``w(t, c) = tf(t, c) / |c| · log(1 + A / f(t))`` (``tf(t, c)`` the count of term ``t`` in topic ``c``,
  ``|c|`` the topic's term count, ``A`` the mean term count per topic, ``f(t)`` the count of ``t`` in all
  topics) — *distinctiveness*: a word frequent in this topic and rare elsewhere;
* ``representation_model = [CharacteristicTerms(...), CtfidfMMR(diversity)]`` (both our own BERTopic
  representation models; BERTopic's ``MaximalMarginalRelevance`` was tried and dropped, see :func:`_mmr`): first drop
  weak candidates (a word must occur in at least ``max(2, min_doc_share · docs)`` distinct questions of the
  topic; proper nouns, Latin and out-of-dictionary tokens — names, ``print``, abbreviations, typos — are kept
  only when at least ``concentration`` of their questions lie in this topic, i.e. they characterise it),
  then a custom maximal marginal relevance — *diversity*: the next keyword is the one with the highest c-TF-IDF
  weight and the least similarity to the keywords already chosen
  (``argmax_w (1 − λ)·w̃(w) − λ·max_k cos(e_w, e_k)``, ``w̃`` the weight scaled by the topic's largest,
  ``e`` the embedder's word vectors, ``λ`` = ``diversity``; see :func:`_mmr` for why the relevance is the
  c-TF-IDF weight rather than BERTopic's word–topic cosine).

It replaced a hand-written c-TF-IDF over Snowball stems shown as their most frequent surface form, with no
diversity step and the project's own short stop-word list (names such as "такое, расписание, элективы,
работает"). BERTopic brings ``hdbscan`` (a wheel; not used here) and reuses ``umap-learn``,
``sentence-transformers`` and the CPU ``torch`` the project pins already; it is imported lazily, only
when topics are named.

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


def _representation_base() -> type:
    """BERTopic's representation base class (imported lazily: the import takes seconds)."""
    from bertopic.representation import BaseRepresentation

    return BaseRepresentation


def _characteristic_terms(analyzer: Callable[[str], list[str]], *, min_doc_share: float, concentration: float) -> Any:
    base = _representation_base()

    class CharacteristicTerms(base):  # type: ignore[misc, valid-type]
        """Keeps candidate words supported by enough distinct questions of the topic; proper nouns, Latin
        and unknown tokens only when they concentrate in the topic (see the module docstring)."""

        def extract_topics(self, topic_model: Any, documents: pd.DataFrame, c_tf_idf: Any,
                           topics: dict[int, list[tuple[str, float]]]) -> dict[int, list[tuple[str, float]]]:
            doc_freq: dict[int, Counter[str]] = {}
            for topic, doc in zip(documents["Topic"], documents["Document"], strict=True):
                doc_freq.setdefault(int(topic), Counter()).update(set(analyzer(doc)))
            n_docs = {t: int((documents["Topic"] == t).sum()) for t in doc_freq}
            overall: Counter[str] = Counter()
            for c in doc_freq.values():
                overall.update(c)
            out: dict[int, list[tuple[str, float]]] = {}
            for topic, words in topics.items():
                df_t = doc_freq.get(int(topic), Counter())
                need = max(2, int(np.ceil(min_doc_share * n_docs.get(int(topic), 0))))
                kept = []
                for word, score in words:
                    if not word or df_t[word] < need:
                        continue
                    if text_ru.token_kind(word) != "word" and df_t[word] < concentration * overall[word]:
                        continue
                    kept.append((word, score))
                out[topic] = kept or [("", 1e-5)]
            return out

    return CharacteristicTerms()


def _mmr(*, diversity: float, top_n_words: int) -> Any:
    """Maximal marginal relevance with the c-TF-IDF weight as relevance (a BERTopic representation model).

    ``next = argmax_w (1 − λ)·w(t, c)/max_w w(t, c) − λ·max_{k chosen} cos(e_w, e_k)`` with ``λ`` =
    ``diversity`` and ``e`` the embedder's word vectors. BERTopic's own ``MaximalMarginalRelevance`` takes the
    cosine between a word and the embedding of all candidate words joined as relevance; with sentence
    embedders on single Russian words that pushed the distinctive words out of the names ("физкультура,
    ходить, освобождение" instead of "физкультура, зачет, отработать"), so the c-TF-IDF ranking stays the
    relevance and the embeddings only keep near-synonyms (``пересдача``/``пересдать``) from filling a name.
    """
    base = _representation_base()

    class CtfidfMMR(base):  # type: ignore[misc, valid-type]
        def extract_topics(self, topic_model: Any, documents: pd.DataFrame, c_tf_idf: Any,
                           topics: dict[int, list[tuple[str, float]]]) -> dict[int, list[tuple[str, float]]]:
            out: dict[int, list[tuple[str, float]]] = {}
            for topic, ws in topics.items():
                words = [(w, float(sc)) for w, sc in ws if w]
                if len(words) <= 1 or topic_model.embedding_model is None:
                    out[topic] = words[:top_n_words]
                    continue
                E = np.asarray(topic_model._extract_embeddings([w for w, _ in words], method="word", verbose=False),
                               dtype=np.float64)
                E /= np.maximum(np.linalg.norm(E, axis=1, keepdims=True), 1e-12)
                rel = np.asarray([sc for _, sc in words]) / max(words[0][1], 1e-12)
                chosen = [0]
                rest = list(range(1, len(words)))
                while rest and len(chosen) < top_n_words:
                    sim = (E[rest] @ E[chosen].T).max(axis=1)
                    score = (1 - diversity) * rel[rest] - diversity * sim
                    chosen.append(rest.pop(int(np.argmax(score))))
                out[topic] = [words[i] for i in chosen]
            return out

    return CtfidfMMR()


class _EmbedderBackend:
    """Adapter of a project embedder (``encode_queries``) to BERTopic's backend protocol."""

    def __new__(cls, embedder: Any) -> Any:
        from bertopic.backend import BaseEmbedder

        class Backend(BaseEmbedder):  # type: ignore[misc, valid-type]
            def __init__(self, inner: Any) -> None:
                super().__init__()
                self.inner = inner

            def embed(self, documents: Sequence[str], verbose: bool = False) -> np.ndarray:
                return np.asarray(self.inner.encode_queries([str(d) for d in documents]), dtype=np.float32)

        return Backend(embedder)


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

    ``embeddings`` are the documents' vectors (aligned with ``docs``); ``embedder`` embeds candidate words
    for MMR — without one, the keywords are the c-TF-IDF ranking after :class:`CharacteristicTerms`.
    """
    from bertopic import BERTopic
    from bertopic.cluster import BaseCluster
    from bertopic.dimensionality import BaseDimensionalityReduction
    from bertopic.vectorizers import ClassTfidfTransformer
    from sklearn.feature_extraction.text import CountVectorizer

    labels = np.asarray(labels, dtype=np.int64)
    if len(docs) != len(labels) or len(docs) != embeddings.shape[0]:
        raise ValueError(f"{len(docs)} documents, {len(labels)} labels, {embeddings.shape[0]} embeddings")
    keep = labels >= 0
    docs_k = [str(d) for d, k in zip(docs, keep, strict=True) if k]
    y = labels[keep]
    if len(set(y.tolist())) < 1 or not docs_k:
        return {}
    analyzer = _analyzer(slang, filler)
    if not any(analyzer(d) for d in docs_k):
        return {int(t): TopicTerms([], []) for t in sorted(set(y.tolist()))}
    chain: list[Any] = [_characteristic_terms(analyzer, min_doc_share=min_doc_share, concentration=concentration)]
    if embedder is not None:
        chain.append(_mmr(diversity=diversity, top_n_words=n_terms))
    model = BERTopic(
        embedding_model=_EmbedderBackend(embedder) if embedder is not None else None,
        umap_model=BaseDimensionalityReduction(),
        hdbscan_model=BaseCluster(),
        vectorizer_model=CountVectorizer(analyzer=analyzer),
        ctfidf_model=ClassTfidfTransformer(),
        representation_model=chain,
        top_n_words=n_terms,
        language="multilingual",  # "english" would strip every non-Latin character before vectorising
        calculate_probabilities=False,
        verbose=False,
    )
    fitted_topics, _ = model.fit_transform(docs_k, embeddings=np.asarray(embeddings[keep], dtype=np.float32), y=y)
    # BERTopic renumbers topics by size: map its ids back to ours through the documents
    mapping: dict[int, int] = {}
    for ours, theirs in zip(y.tolist(), list(fitted_topics), strict=True):
        mapping.setdefault(int(theirs), int(ours))
    out: dict[int, TopicTerms] = {}
    for theirs, ours in mapping.items():
        words = [(w, float(s)) for w, s in (model.get_topic(theirs) or []) if w]
        words = words[:n_terms]
        out[ours] = TopicTerms([w for w, _ in words], [s for _, s in words], [text_ru.token_kind(w) for w, _ in words])
    for t in set(y.tolist()):
        out.setdefault(int(t), TopicTerms([], []))
    return out


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
    from voproshalych_eval.llm.prompts import render

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

"""Domain analysis of the question log: volume, users, lengths, answered rate, scores, terms, slang,
repeats, message categories and sessions.

All counts are over the whole filtered log (``n``); each table says what it counts. Times are shown in
``tz`` (default ``Asia/Yekaterinburg``, UTC+5, the bot's home time zone); rows without ``created_at`` are
counted in totals and left out of time charts (their number is reported as ``n_without_time``).

* Repeats: *exact* = the same normalised text (lowercase, ``ё → е``, whitespace); *near-duplicate
  clusters* = connected components of the graph linking distinct normalised texts whose embeddings have
  cosine similarity >= ``near_threshold`` (default 0.92), via ``metrics.geometry.near_duplicate_pairs``.
* Categories come from the transparent rule-based classifier :func:`text_ru.classify` (labelled so).
* Answer rates: ``answered_rate`` = non-empty answer (raw); ``effective_answered_rate`` = real answers after
  the answer classifier (:mod:`~voproshalych_eval.analytics.answers`: not-found replies, refusals and
  templates are declines); both are given per period and per category.
* Sessions: per user, ordered by time; a new session starts after a row with ``stop_point`` (the user
  reset the dialog after that turn), after a pause longer than ``pause_minutes`` (default 30), or when
  the time is unknown. ``turns`` = rows per session.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from voproshalych_eval.analytics import text_ru
from voproshalych_eval.analytics.question_log import SCORE_DOWN, SCORE_UP, is_empty_question
from voproshalych_eval.metrics.geometry import near_duplicate_pairs

DEFAULT_TZ = "Asia/Yekaterinburg"
WEEKDAYS_RU = ["пн", "вт", "ср", "чт", "пт", "сб", "вс"]


@dataclass
class DomainResult:
    metrics: dict[str, Any]
    tables: dict[str, pd.DataFrame]
    params: dict[str, Any] = field(default_factory=dict)

    def to_dict(self, *, max_rows: int = 30) -> dict[str, Any]:
        out: dict[str, Any] = {"metrics": self.metrics, "params": self.params}
        for name in ("categories", "score_distribution", "top_terms", "top_bigrams", "slang_usage", "exact_repeats",
                     "near_duplicate_clusters", "turns_per_session", "volume_month"):
            if name in self.tables:
                df = self.tables[name].head(max_rows).copy()
                for c in df.columns:
                    if pd.api.types.is_datetime64_any_dtype(df[c]):
                        df[c] = df[c].astype(str)
                out[name] = df.to_dict(orient="records")
        return out


def near_duplicate_components(n: int, pairs: list[tuple[int, int, float]]) -> np.ndarray:
    """The component of each of ``n`` texts in the graph of near-duplicate ``pairs``, named by its smallest
    index (scipy's connected components; a Python union-find over a 50k log's pairs took seconds)."""
    from scipy.sparse import coo_matrix  # heavy: defers scipy.sparse to logs with near-duplicates
    from scipy.sparse.csgraph import connected_components  # heavy: as above

    if not pairs:
        return np.arange(n)
    ij = np.array([(p[0], p[1]) for p in pairs], dtype=np.int64)
    graph = coo_matrix((np.ones(len(ij), dtype=np.int8), (ij[:, 0], ij[:, 1])), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    smallest = np.full(int(labels.max()) + 1, n, dtype=np.int64)
    np.minimum.at(smallest, labels, np.arange(n))
    return smallest[labels]


def _top_terms(docs: list[list[str]], vocab: text_ru.TermVocabulary, mask: np.ndarray, *, top_n: int,
               bigram: bool) -> pd.DataFrame:
    """The ``top_n`` terms (or bigrams) by the number of masked documents that contain them.

    Documents with the same terms are counted once with their number of masked rows, in the order of their
    first masked row (the counts, and the order of ties, of a row-by-row pass)."""
    c: Counter[str] = Counter()
    n_docs = int(mask.sum())
    weight: dict[tuple[str, ...], int] = {}
    for d, m in zip(docs, mask, strict=True):
        if m:
            key = tuple(d)
            weight[key] = weight.get(key, 0) + 1
    for key, w in weight.items():
        d = list(key)
        c.update(dict.fromkeys(set(text_ru.bigrams(d) if bigram else d), w))
    rows = [{"term": vocab.display(t), "stem": t, "questions": cnt, "share": cnt / n_docs if n_docs else 0.0}
            for t, cnt in c.most_common(top_n)]
    return pd.DataFrame(rows, columns=["term", "stem", "questions", "share"])


def sessions(log: pd.DataFrame, *, pause_minutes: float = 30.0) -> pd.Series:
    """Session number of every row (aligned to ``log.index``); see the module docstring for the rule."""
    if log.empty:
        return pd.Series([], dtype="int64")
    order = log.sort_values(["user_id", "created_at", "id"], na_position="last", kind="stable")
    user = order["user_id"].astype("float64").fillna(-1).to_numpy()
    ts = order["created_at"]
    gap = ts.diff().dt.total_seconds().to_numpy()
    new = np.ones(len(order), dtype=bool)
    same_user = np.r_[False, user[1:] == user[:-1]]
    prev_stop = np.r_[True, order["stop_point"].to_numpy(bool)[:-1]]
    with np.errstate(invalid="ignore"):
        long_pause = ~(gap <= pause_minutes * 60)  # NaN (unknown time) → new session
    new = ~same_user | prev_stop | long_pause
    if order["user_id"].isna().any():  # rows without a user are their own sessions
        new |= order["user_id"].isna().to_numpy()
    sid = np.cumsum(new)
    return pd.Series(sid, index=order.index).reindex(log.index)


def _per_text_row(name: str, values: Any, has_text: np.ndarray) -> Any:
    """``values`` with one entry per row with question text: given so, returned as is; given one per log row,
    the rows with text are taken; any other length raises ``ValueError`` (a silent misalignment otherwise)."""
    if values is None:
        return None
    m, n, n_text = len(values), len(has_text), int(has_text.sum())
    if m == n_text:
        return values
    if m == n:
        return np.asarray(values)[has_text] if isinstance(values, np.ndarray) else [
            v for v, keep in zip(values, has_text, strict=True) if keep]
    raise ValueError(f"{name}: {m} entries, but the log has {n} rows, {n_text} of them with question text "
                     "(give one per row with text, question_log.text_rows, or one per row)")


def domain_analysis(
    log: pd.DataFrame,
    vectors: np.ndarray | None = None,
    *,
    tz: str = DEFAULT_TZ,
    pause_minutes: float = 30.0,
    near_threshold: float = 0.92,
    top_n: int = 30,
    slang: text_ru.SlangNormalizer | None = None,
    categories: list[str] | None = None,
    answer_classes: np.ndarray | None = None,
) -> DomainResult:
    """All domain tables for a log (see the module docstring). ``vectors`` enable near-duplicate clusters.

    Rows without question text (:func:`question_log.is_empty_question`) count as events (volume, users,
    scores, sessions) and are left out of the text tables (lengths, terms, slang, repeats, categories),
    whose shares are over ``n_text_questions``. ``vectors`` and ``categories``, when given, have one
    entry per row with text, in log order (:func:`question_log.text_rows`), or one per row of ``log`` (the
    rows with text are then taken); any other length is a ``ValueError`` naming both counts.
    """
    n = len(log)
    slang = slang or text_ru.SlangNormalizer()
    tables: dict[str, pd.DataFrame] = {}
    answered_all = log["answered"].to_numpy(bool)
    # answer classes come per row of the whole log (like ``answered``)
    effective_all = (np.asarray(answer_classes) == "answer") if answer_classes is not None else answered_all
    has_text = ~log["question"].map(is_empty_question).to_numpy(bool)
    tlog = log.loc[has_text]
    n_text = len(tlog)
    vectors = _per_text_row("vectors", vectors, has_text)
    categories = _per_text_row("categories", categories, has_text)
    questions = tlog["question"].astype(str).tolist()
    answered = answered_all[has_text]
    effective = effective_all[has_text]
    ts = log["created_at"]
    has_ts = ts.notna()
    local = ts[has_ts].dt.tz_convert(tz)

    # ---- volume over time
    def _vol(freq: str) -> pd.DataFrame:
        cols = ["period", "questions", "answered", "answered_rate", "effective_answered", "effective_answered_rate",
                "users"]
        if not len(local):
            return pd.DataFrame(columns=cols)
        per = local.dt.tz_localize(None).dt.to_period(freq).dt.start_time
        g = pd.DataFrame({"period": per, "answered": answered_all[has_ts.to_numpy()],
                          "effective": effective_all[has_ts.to_numpy()],
                          "user": log.loc[has_ts, "user_id"].to_numpy()}).groupby("period")
        out = pd.DataFrame({"questions": g.size(), "answered": g["answered"].sum(),
                            "effective_answered": g["effective"].sum(), "users": g["user"].nunique()})
        out["answered_rate"] = out["answered"] / out["questions"]
        out["effective_answered_rate"] = out["effective_answered"] / out["questions"]
        return out.reset_index()[cols]

    tables["volume_day"] = _vol("D")
    tables["volume_week"] = _vol("W")
    tables["volume_month"] = _vol("M")
    hours = local.dt.hour.value_counts().reindex(range(24), fill_value=0)
    tables["by_hour"] = pd.DataFrame({"hour": range(24), "questions": hours.to_numpy()})
    wd = local.dt.day_of_week.value_counts().reindex(range(7), fill_value=0)
    tables["by_weekday"] = pd.DataFrame({"weekday": range(7), "name": WEEKDAYS_RU, "questions": wd.to_numpy()})
    month_of_year = local.dt.month.value_counts().reindex(range(1, 13), fill_value=0)
    tables["by_month_of_year"] = pd.DataFrame({"month": range(1, 13), "questions": month_of_year.to_numpy()})

    # ---- users
    per_user = log.dropna(subset=["user_id"]).groupby("user_id").size()
    qpu = per_user.clip(upper=10).value_counts().sort_index()
    tables["questions_per_user"] = pd.DataFrame(
        {"questions": [str(int(i)) if i < 10 else "10+" for i in qpu.index], "users": qpu.to_numpy()}
    )

    # ---- lengths
    chars = tlog["question"].astype(str).str.len()
    n_words = {q: len(text_ru.tokenize(q)) for q in dict.fromkeys(questions)}  # each distinct text once
    words = pd.Series([n_words[q] for q in questions], index=tlog.index, dtype="int64")
    tables["lengths"] = pd.DataFrame({"chars": chars.to_numpy(), "words": words.to_numpy(), "answered": answered})

    # ---- scores
    s = log["score"]
    tables["score_distribution"] = pd.DataFrame(
        {
            "score": ["5 (👍)", "1 (👎)", "other", "unrated"],
            "questions": [int((s == SCORE_UP).sum()), int((s == SCORE_DOWN).sum()),
                          int((s.notna() & ~s.isin([SCORE_UP, SCORE_DOWN])).sum()), int(s.isna().sum())],
        }
    )

    # ---- terms and bigrams
    docs, vocab = text_ru.document_terms(questions, slang=slang)
    all_mask = np.ones(n_text, dtype=bool)
    for label, mask in (("all", all_mask), ("answered", answered), ("unanswered", ~answered)):
        t = _top_terms(docs, vocab, mask, top_n=top_n, bigram=False)
        t.insert(0, "subset", label)
        b = _top_terms(docs, vocab, mask, top_n=top_n, bigram=True)
        b.insert(0, "subset", label)
        tables.setdefault("_terms", []).append(t)  # type: ignore[arg-type]
        tables.setdefault("_bigrams", []).append(b)  # type: ignore[arg-type]
    tables["top_terms"] = pd.concat(tables.pop("_terms"), ignore_index=True)  # type: ignore[arg-type]
    tables["top_bigrams"] = pd.concat(tables.pop("_bigrams"), ignore_index=True)  # type: ignore[arg-type]

    # ---- slang
    uniq_q = Counter(questions)
    slang_rows: Counter[str] = Counter()
    any_slang = 0
    for q, cnt in uniq_q.items():
        found = {k for k in (slang.match(t) for t in text_ru.tokenize(q)) if k is not None}
        for k in found:
            slang_rows[k] += cnt
        if found:
            any_slang += cnt
    tables["slang_usage"] = pd.DataFrame(
        [{"slang": k, "normal_form": slang.slang[k], "questions": c, "share": c / n_text if n_text else 0.0}
         for k, c in slang_rows.most_common()],
        columns=["slang", "normal_form", "questions", "share"],
    )

    # ---- repeats
    normal = {q: text_ru.normalize(q) for q in n_words}
    norm = pd.Series([normal[q] for q in questions], index=tlog.index)
    vc = norm.value_counts()
    exact = vc[vc > 1]
    tables["exact_repeats"] = pd.DataFrame({"question": exact.index, "count": exact.to_numpy()})
    near_rows: list[dict[str, Any]] = []
    n_near_clusters = None
    rows_in_near = None
    if vectors is not None and n_text:
        uniq_texts = list(vc.index)
        first_row = pd.Series(np.arange(n_text), index=norm.to_numpy()).groupby(level=0).first()
        U = np.asarray(vectors)[first_row.reindex(uniq_texts).to_numpy()]
        pairs = near_duplicate_pairs(U, threshold=near_threshold, limit=5_000_000) if len(U) > 1 else []
        comp = near_duplicate_components(len(uniq_texts), pairs)
        counts = vc.to_numpy()
        clusters = pd.DataFrame({"comp": comp, "text": uniq_texts, "count": counts})
        g = clusters.groupby("comp")
        agg = pd.DataFrame({"variants": g.size(), "questions": g["count"].sum()})
        multi = agg[agg["variants"] > 1].sort_values("questions", ascending=False)
        n_near_clusters = int(len(multi))
        rows_in_near = int(multi["questions"].sum())
        for comp_id, r in multi.head(200).iterrows():
            members = clusters[clusters["comp"] == comp_id].sort_values("count", ascending=False)
            near_rows.append(
                {"cluster": int(comp_id), "variants": int(r["variants"]), "questions": int(r["questions"]),
                 "examples": " | ".join(members["text"].head(4))}
            )
    tables["near_duplicate_clusters"] = pd.DataFrame(near_rows, columns=["cluster", "variants", "questions", "examples"])

    # ---- categories (rule-based)
    cats = categories if categories is not None else text_ru.classify_many(questions, slang=slang)
    cc = Counter(cats)
    tables["categories"] = pd.DataFrame(
        [{"category": c, "questions": cc.get(c, 0), "share": cc.get(c, 0) / n_text if n_text else 0.0,
          "answered_rate": float(answered[np.asarray(cats) == c].mean()) if cc.get(c) else None,
          "effective_answered_rate": float(effective[np.asarray(cats) == c].mean()) if cc.get(c) else None}
         for c in text_ru.CATEGORIES],
    )

    # ---- sessions
    sid = sessions(log, pause_minutes=pause_minutes)
    turns = sid.value_counts() if n else pd.Series(dtype="int64")
    tps = turns.clip(upper=10).value_counts().sort_index()
    tables["turns_per_session"] = pd.DataFrame(
        {"turns": [str(int(i)) if i < 10 else "10+" for i in tps.index], "sessions": tps.to_numpy()}
    )

    metrics: dict[str, Any] = {
        "n_questions_used": n,
        "n_text_questions": n_text,
        "n_empty_questions": n - n_text,
        "n_without_time": int((~has_ts).sum()),
        "unique_users": int(per_user.size),
        "questions_per_user_mean": float(per_user.mean()) if len(per_user) else None,
        "questions_per_user_median": float(per_user.median()) if len(per_user) else None,
        "answered_rate": float(answered_all.mean()) if n else None,
        "effective_answered_rate": float(effective_all.mean()) if n else None,
        "rated_share": float(s.notna().mean()) if n else None,
        "thumbs_up": int((s == SCORE_UP).sum()),
        "thumbs_down": int((s == SCORE_DOWN).sum()),
        "mean_question_chars": float(chars.mean()) if n_text else None,
        "median_question_chars": float(chars.median()) if n_text else None,
        "slang_share": any_slang / n_text if n_text else None,
        "exact_repeat_share": float(exact.sum() / n_text) if n_text else None,
        "n_exact_repeat_groups": int(len(exact)),
        "n_near_duplicate_clusters": n_near_clusters,
        "near_duplicate_share": (rows_in_near / n_text) if (rows_in_near is not None and n_text) else None,
        "n_sessions": int(turns.size),
        "turns_per_session_mean": float(turns.mean()) if len(turns) else None,
        "peak_month": str(tables["volume_month"].sort_values("questions").iloc[-1]["period"].date())
        if len(tables["volume_month"]) else None,
        **{f"share_{c}": (cc.get(c, 0) / n_text if n_text else None) for c in text_ru.CATEGORIES},
    }
    params = {"tz": tz, "pause_minutes": pause_minutes, "near_threshold": near_threshold,
              "classifier": "rule-based (text_ru.CLASSIFIER_RULES)", "n_slang_entries": len(slang.slang)}
    return DomainResult(metrics, tables, params)

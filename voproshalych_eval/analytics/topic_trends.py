"""What changed: topics over time, emerging and growing topics, seasonal peaks, a "this month" summary.

Inputs are the topic of every log row, its month (``YYYY-MM`` in the bot's time zone; rows without a
timestamp are left out and counted) and, optionally, whether it got a real answer.

* **Monthly** (:attr:`TopicTrends.monthly`): questions per topic and month and the topic's share of the
  month's questions.
* **Changes** (:attr:`TopicTrends.changes`): the chosen period (``window`` months ending with ``end``; by
  default the latest month of the log) against the ``window`` months before it. For topic ``t`` with
  ``a`` questions now, ``b`` before, and ``N``/``M`` questions in all topics now/before, the shares are
  ``a/N`` and ``b/M`` and ``ratio = (a/N) / (b/M)``. Under "no change" ``a`` given ``a + b`` is binomial with
  ``p0 = N / (N + M)`` (the conditional test of two Poisson rates; ``scipy.stats.binomtest``), so
  ``p_up`` / ``p_down`` are its one-sided p-values. Status: ``emerging`` — at most ``max_prev_emerging``
  questions before, at least ``min_count`` now and ``p_up < alpha``; ``growing`` — ``ratio >= min_ratio`` and
  ``p_up < alpha``; ``shrinking`` — ``ratio <= 1/min_ratio`` and ``p_down < alpha``; else ``stable``.
* **Emerging words** (:attr:`TopicTrends.terms`, with ``texts``): a new subject often joins an existing
  topic instead of forming its own cluster, so the same test runs on the words of the questions (lemmas
  without stop words and filler, :func:`text_ru.topic_terms`; a question counts once per word): words with
  at most ``max_prev_emerging`` questions before and at least ``min_count`` now (``p_up < alpha``) are
  emerging, with an example question.
* **Seasonal peaks** (:attr:`TopicTrends.peaks`): per topic and calendar month (all years together), the
  lift ``share of the topic among that calendar month's questions / the topic's share overall``; the peak is
  the calendar month with the largest lift among months with at least ``min_count`` of the topic's
  questions, reported when the lift is at least ``min_ratio``.
* **Summary** (:func:`summary_lines`): questions and effective answered rate now vs before, the largest
  topics, emerging/growing/shrinking topics, topics in their seasonal peak, and the top coverage gap.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from voproshalych_eval.analytics.text_ru import topic_terms

MONTHS_RU = ["январь", "февраль", "март", "апрель", "май", "июнь", "июль", "август", "сентябрь", "октябрь",
             "ноябрь", "декабрь"]
MONTHS_EN = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
             "November", "December"]
STATUSES = ("emerging", "growing", "shrinking", "stable")
TERM_COLUMNS = ["term", "n_now", "n_prev", "p_up", "example"]
STATUS_NAMES = {"emerging": ("новая", "emerging"), "growing": ("растёт", "growing"),
                "shrinking": ("убывает", "shrinking"), "stable": ("без изменений", "stable")}


@dataclass
class TopicTrends:
    monthly: pd.DataFrame  # topic, name, period, n, share
    changes: pd.DataFrame  # topic, name, n_now, n_prev, share_now, share_prev, ratio, p_up, p_down, status
    peaks: pd.DataFrame  # topic, name, peak_month, peak_month_name, lift, n_peak
    period: list[str]  # months of the chosen period
    previous: list[str]  # months of the period before
    totals: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    terms: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=TERM_COLUMNS))

    def status_of(self, status: str) -> pd.DataFrame:
        return self.changes[self.changes["status"] == status]

    def to_dict(self, *, max_rows: int = 30) -> dict[str, Any]:
        return {"period": self.period, "previous": self.previous, "totals": self.totals, "params": self.params,
                "changes": self.changes.head(max_rows).to_dict(orient="records"),
                "emerging": self.status_of("emerging")["name"].tolist(),
                "growing": self.status_of("growing")["name"].tolist(),
                "shrinking": self.status_of("shrinking")["name"].tolist(),
                "emerging_terms": self.terms.head(max_rows).to_dict(orient="records"),
                "peaks": self.peaks.head(max_rows).to_dict(orient="records")}


def _shift(month: str, k: int) -> str:
    return str(pd.Period(month, freq="M") + k)


def topic_trends(
    labels: np.ndarray,
    months: pd.Series | np.ndarray | list[Any],
    names: dict[int, str],
    *,
    effective: np.ndarray | None = None,
    topics: list[int] | None = None,
    end: str | None = None,
    window: int = 1,
    min_count: int = 5,
    min_ratio: float = 1.5,
    alpha: float = 0.05,
    max_prev_emerging: int = 1,
    texts: list[str] | None = None,
) -> TopicTrends:
    """Monthly topic counts, changes of the chosen period vs the one before, seasonal peaks (module docstring).

    ``topics`` limits the changes and peaks to these topic ids (e.g. the clustered ones); ``end`` is the last
    month of the period (``YYYY-MM``, default: the latest month in ``months``); ``texts`` (one per row) adds
    the emerging words.
    """
    from scipy.stats import binomtest  # heavy: defers scipy

    labels = np.asarray(labels)
    per = pd.Series(list(months), dtype=object)
    has = per.notna().to_numpy()
    frame = pd.DataFrame({"topic": labels[has], "period": per[has].astype(str).to_numpy()})
    eff = np.asarray(effective, dtype=bool)[has] if effective is not None else None
    params = {"window": window, "min_count": min_count, "min_ratio": min_ratio, "alpha": alpha,
              "max_prev_emerging": max_prev_emerging, "n_without_time": int((~has).sum())}
    empty_changes = pd.DataFrame(columns=["topic", "name", "n_now", "n_prev", "share_now", "share_prev", "ratio",
                                          "p_up", "p_down", "status"])
    empty_peaks = pd.DataFrame(columns=["topic", "name", "peak_month", "peak_month_name", "lift", "n_peak"])
    if frame.empty:
        return TopicTrends(pd.DataFrame(columns=["topic", "name", "period", "n", "share"]), empty_changes, empty_peaks,
                           [], [], {}, params)
    monthly = frame.groupby(["topic", "period"]).size().rename("n").reset_index()
    month_tot = frame.groupby("period").size()
    monthly["share"] = monthly["n"] / monthly["period"].map(month_tot)
    monthly.insert(1, "name", monthly["topic"].map(lambda t: names.get(int(t), str(t))))
    all_months = sorted(month_tot.index)
    end = end or all_months[-1]
    period = [_shift(end, -i) for i in range(window - 1, -1, -1)]
    previous = [_shift(period[0], -i) for i in range(window, 0, -1)]
    wanted = topics if topics is not None else sorted(set(labels.tolist()))
    now = frame[frame["period"].isin(period)]
    before = frame[frame["period"].isin(previous)]
    N, M = len(now), len(before)
    cn, cb = now["topic"].value_counts(), before["topic"].value_counts()
    rows = []
    for t in wanted:
        a, b = int(cn.get(t, 0)), int(cb.get(t, 0))
        share_now = a / N if N else None
        share_prev = b / M if M else None
        if a + b and N and M:
            p0 = N / (N + M)
            p_up = float(binomtest(a, a + b, p0, alternative="greater").pvalue)
            p_down = float(binomtest(a, a + b, p0, alternative="less").pvalue)
        else:
            p_up = p_down = 1.0
        ratio = (share_now / share_prev) if (share_prev and share_now is not None) else (np.inf if a else np.nan)
        if b <= max_prev_emerging and a >= min_count and p_up < alpha:
            status = "emerging"
        elif ratio >= min_ratio and a >= min_count and p_up < alpha:
            status = "growing"
        elif ratio <= 1 / min_ratio and b >= min_count and p_down < alpha:
            status = "shrinking"
        else:
            status = "stable"
        rows.append({"topic": int(t), "name": names.get(int(t), str(t)), "n_now": a, "n_prev": b,
                     "share_now": share_now, "share_prev": share_prev, "ratio": float(ratio), "p_up": p_up,
                     "p_down": p_down, "status": status})
    changes = pd.DataFrame(rows, columns=empty_changes.columns) if rows else empty_changes
    if len(changes):
        order = {s: i for i, s in enumerate(STATUSES)}
        changes = changes.assign(_o=changes["status"].map(order)).sort_values(
            ["_o", "n_now"], ascending=[True, False]).drop(columns="_o").reset_index(drop=True)

    # seasonal peaks over calendar months
    uniq = frame["period"].unique()  # a few dozen months: parsed once each, not once per row
    months_u = pd.PeriodIndex(uniq, freq="M").month.to_numpy()
    cal = frame.assign(month=months_u[pd.Index(uniq).get_indexer(frame["period"])])
    cal_tot = cal.groupby("month").size()
    overall = cal["topic"].value_counts() / len(cal)
    peak_rows = []
    for t in wanted:
        ct = cal[cal["topic"] == t].groupby("month").size()
        ct = ct[ct >= min_count]
        if ct.empty or not overall.get(t):
            continue
        lift = (ct / cal_tot.reindex(ct.index)) / overall[t]
        m = int(lift.idxmax())
        if lift[m] >= min_ratio:
            peak_rows.append({"topic": int(t), "name": names.get(int(t), str(t)), "peak_month": m,
                              "peak_month_name": MONTHS_RU[m - 1], "lift": float(lift[m]), "n_peak": int(ct[m])})
    peaks = (pd.DataFrame(peak_rows, columns=empty_peaks.columns).sort_values("lift", ascending=False)
             .reset_index(drop=True) if peak_rows else empty_peaks)

    totals: dict[str, Any] = {"n_now": N, "n_prev": M,
                              "change": (N - M) / M if M else None}
    if eff is not None:
        en = eff[frame["period"].isin(period).to_numpy()]
        eb = eff[frame["period"].isin(previous).to_numpy()]
        totals["effective_answered_now"] = float(en.mean()) if len(en) else None
        totals["effective_answered_prev"] = float(eb.mean()) if len(eb) else None
    terms = _emerging_terms(texts, per, period, previous, N, M, min_count=min_count, alpha=alpha,
                            max_prev=max_prev_emerging) if texts is not None else pd.DataFrame(columns=TERM_COLUMNS)
    return TopicTrends(monthly, changes, peaks, period, previous, totals, params, terms)


def _emerging_terms(texts: list[str], per: pd.Series, period: list[str], previous: list[str], N: int, M: int, *,
                    min_count: int, alpha: float, max_prev: int) -> pd.DataFrame:
    from scipy.stats import binomtest  # heavy: defers scipy

    now_c: Counter[str] = Counter()
    prev_c: Counter[str] = Counter()
    example: dict[str, str] = {}
    months = per.astype(object).to_numpy()
    for text, month in zip(texts, months, strict=True):
        if month in period:
            words = set(topic_terms(text))
            now_c.update(words)
            for w in words:
                example.setdefault(w, str(text))
        elif month in previous:
            prev_c.update(set(topic_terms(text)))
    rows = []
    for w, a in now_c.items():
        b = prev_c.get(w, 0)
        if a < min_count or b > max_prev or not (N and M):
            continue
        p_up = float(binomtest(a, a + b, N / (N + M), alternative="greater").pvalue)
        if p_up < alpha:
            rows.append({"term": w, "n_now": a, "n_prev": b, "p_up": p_up, "example": example[w]})
    out = pd.DataFrame(rows, columns=TERM_COLUMNS)
    return out.sort_values(["n_now", "term"], ascending=[False, True]).reset_index(drop=True) if len(out) else out


def _pct(v: float | None) -> str:
    return "—" if v is None or not np.isfinite(v) else f"{100 * v:.0f}%"


def _period_label(months: list[str]) -> str:
    if not months:
        return "—"
    return months[0] if len(months) == 1 else f"{months[0]} … {months[-1]}"


def _guillemets(s: str) -> str:
    return f"«{s}»"


def summary_lines(trends: TopicTrends, *, gaps: pd.DataFrame | None = None, lang: str = "ru",
                  top_n: int = 3, quote: Any = _guillemets) -> list[str]:
    """A short "this period" summary for a product owner (plain sentences, numbers included).

    ``quote`` wraps every data value (topic names, words, example questions): ``«…»`` for plain text;
    Markdown outputs pass ``voproshalych_eval.markdown.literal`` so that user text is never rendered."""
    ru = lang == "ru"
    t = trends.totals
    if not trends.period:
        return ["Нет вопросов с датой — сводку по месяцам построить нельзя." if ru
                else "No dated questions — no monthly summary."]
    lines = []
    now, before = _period_label(trends.period), _period_label(trends.previous)
    ch = t.get("change")
    if ru:
        lines.append(f"{now}: {t['n_now']} вопросов против {t['n_prev']} за {before}"
                     + (f" ({'+' if ch >= 0 else ''}{100 * ch:.0f}%)." if ch is not None else "."))
    else:
        lines.append(f"{now}: {t['n_now']} questions vs {t['n_prev']} in {before}"
                     + (f" ({'+' if ch >= 0 else ''}{100 * ch:.0f}%)." if ch is not None else "."))
    if "effective_answered_now" in t:
        a, b = t.get("effective_answered_now"), t.get("effective_answered_prev")
        delta = f" ({'+' if a - b >= 0 else ''}{100 * (a - b):.0f} п. п.)" if a is not None and b is not None else ""
        delta_en = f" ({'+' if a - b >= 0 else ''}{100 * (a - b):.0f} pp)" if a is not None and b is not None else ""
        lines.append(f"Настоящий ответ получили {_pct(a)} вопросов (было {_pct(b)}){delta}." if ru
                     else f"{_pct(a)} of questions got a real answer (was {_pct(b)}){delta_en}.")
    top = trends.changes.sort_values("n_now", ascending=False).head(top_n)
    top = top[top["n_now"] > 0]
    if len(top):
        items = ", ".join(f"{quote(str(r['name']))} ({r['n_now']})" for _, r in top.iterrows())
        lines.append(f"Больше всего спрашивали: {items}." if ru else f"Asked most: {items}.")
    for status, ru_text, en_text in (("emerging", "Новые темы", "New topics"),
                                     ("growing", "Растут", "Growing"), ("shrinking", "Убывают", "Shrinking")):
        d = trends.status_of(status)
        if len(d):
            items = ", ".join(f"{quote(str(r['name']))} ({r['n_prev']} → {r['n_now']})" for _, r in d.head(5).iterrows())
            lines.append(f"{ru_text}: {items}." if ru else f"{en_text}: {items}.")
    if len(trends.terms):
        items = ", ".join(f"{quote(str(r['term']))} ({r['n_prev']} → {r['n_now']}, "
                          f"{'напр.' if ru else 'e.g.'} {quote(str(r['example']))})"
                          for _, r in trends.terms.head(5).iterrows())
        lines.append(f"Новые слова в вопросах: {items}." if ru else f"New words in the questions: {items}.")
    if not len(trends.changes[trends.changes["status"] != "stable"]) and not len(trends.terms):
        lines.append("Заметных изменений по темам нет (биномиальный тест, α = 0.05)." if ru
                     else "No notable topic changes (binomial test, α = 0.05).")
    cal_month = int(trends.period[-1][-2:])
    seasonal = trends.peaks[trends.peaks["peak_month"] == cal_month]
    if len(seasonal):
        items = ", ".join(f"{quote(str(r['name']))} (×{r['lift']:.1f})" for _, r in seasonal.head(5).iterrows())
        lines.append(f"Сезонный пик в этом месяце обычно у: {items}." if ru
                     else f"Usually peaking in this calendar month: {items}.")
    if gaps is not None and len(gaps):
        g = gaps.iloc[0]
        lines.append(f"Главный пробел в базе знаний: {quote(str(g['name']))} ({int(g['size'])} вопросов, настоящий "
                     f"ответ у {_pct(g['effective_answered_share'])})." if ru else
                     f"Top knowledge-base gap: {quote(str(g['name']))} ({int(g['size'])} questions, real answer for "
                     f"{_pct(g['effective_answered_share'])}).")
    return lines


def trends_of_period(
    stored: TopicTrends | None,
    labels: np.ndarray,
    months: pd.Series | np.ndarray | list[Any],
    names: dict[int, str],
    *,
    end: str,
    window: int = 1,
    **options: Any,
) -> TopicTrends:
    """:func:`topic_trends` for the ``window`` months ending ``end``, reusing ``stored`` when it is that period.

    ``stored`` is what the analysis computed (and stored) for its default period. When the period and every
    test setting match, it is returned as it is, so reopening an analysis does not recompute the trends (nor
    load scipy and the lemmatiser to do so); any other period is computed from ``labels`` and ``months``.
    """
    wanted = {"window": int(window), "min_count": options.get("min_count", 5),
              "min_ratio": options.get("min_ratio", 1.5), "alpha": options.get("alpha", 0.05),
              "max_prev_emerging": options.get("max_prev_emerging", 1)}
    if (stored is not None and stored.period and stored.period[-1] == end and len(stored.period) == int(window)
            and all(stored.params.get(k) == v for k, v in wanted.items())):
        return stored
    return topic_trends(labels, months, names, end=end, window=int(window), **options)

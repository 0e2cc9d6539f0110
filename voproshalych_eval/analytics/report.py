"""Coverage-gap report for a product owner: Markdown and a self-contained HTML page (no CDN, no scripts).

What to write next in the knowledge base: the ranked coverage gaps (topics with many questions, a low
answered share or a large distance to any chunk), each with its size, answered share, distance and
example questions (near-duplicates folded, with their repeat count "×14"), plus the n the analysis used, the
raw and the effective answered rate (declines in disguise removed), the formula, and the never-retrieved
chunks; the snapshot the run read, and the silhouette with what it means plus the seed stability (ARI).
In Russian (``lang="ru"``, the default) or English (``lang="en"``): every fixed text comes from :data:`TEXTS`.
"""

from __future__ import annotations

import html
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from voproshalych_eval import markdown as md
from voproshalych_eval.analytics.topic_trends import (
    MONTHS_EN,
    MONTHS_RU,
    STATUS_NAMES,
    TopicTrends,
    summary_lines,
)
from voproshalych_eval.analytics.topics import GAP_FORMULA, format_example, silhouette_verdict
from voproshalych_eval.redaction import redact

#: every fixed text of the report: key -> (Russian, English)
TEXTS: dict[str, tuple[str, str]] = {
    "title": ("Вопрошалыч: пробелы в покрытии базы знаний", "Voproshalych: knowledge-base coverage gaps"),
    "title_short": ("Вопрошалыч: пробелы в покрытии", "Voproshalych: coverage gaps"),
    "generated": ("Сформировано", "Generated"),
    "source": ("источник", "source"),
    "snapshot": ("снимок", "snapshot"),
    "no_snapshot": ("без базы знаний (только журнал)", "no knowledge base (the log alone)"),
    "filters": ("фильтры", "filters"),
    "none": ("нет", "none"),
    "n_used": ("Использовано вопросов", "Questions used"),
    "n_used_note": ("весь журнал после фильтров; сохранённых векторов {stored}, досчитано {embedded} моделью",
                    "the whole log after the filters; stored vectors {stored}, {embedded} embedded by the model"),
    "answered": ("Доля отвеченных: {eff} фактически (настоящие ответы) · {raw} по непустому ответу; отказов под "
                 "видом ответа: {declined}",
                 "Answered: {eff} effectively (real answers) · {raw} with a non-empty answer; declines in disguise: "
                 "{declined}"),
    "answer_ci": ("С учётом ошибок классификатора ответов: {value}, 95% ДИ [{lo}; {hi}]; его точность по "
                  "кросс-валидации {acc} [{acc_lo}; {acc_hi}] на {n} размеченных текстах",
                  "With the answer classifier's errors: {value}, 95% CI [{lo}; {hi}]; its cross-validated accuracy "
                  "{acc} [{acc_lo}; {acc_hi}] on {n} labelled texts"),
    "answer_rules_only": ("Классы ответов дали правила-шаблоны: тексты ответов не размечены, точность неизвестна",
                          "Answer classes come from the pattern rules: no answer texts labelled, accuracy unknown"),
    "n_topics": ("Тем (KMeans, k по силуэту): {k}", "Topics (KMeans, k by silhouette): {k}"),
    "silhouette": ("Силуэт {value}: {verdict}", "Silhouette {value}: {verdict}"),
    "seed_ari": ("Устойчивость тем к случайному зерну (ARI между запусками, 1 — то же разбиение): среднее {mean}, "
                 "минимум {min}",
                 "Stability of the topics across random starting centres (ARI between runs, 1 = the same partition): mean "
                 "{mean}, min {min}"),
    "coverage": ("Покрытие базы знаний (чанки в top-k / top-1): {k} / {one}",
                 "Knowledge-base coverage (chunks in the top-k / top-1): {k} / {one}"),
    "write_first": ("Что дописать в первую очередь", "What to write first"),
    "gap_formula": ("Оценка пробела: {formula}. Больше — важнее.", "Gap score: {formula}. Higher = more important."),
    "col_topic": ("тема", "topic"),
    "col_questions": ("вопросов", "questions"),
    "col_answered": ("отвечено фактически (непустой ответ)", "answered effectively (non-empty answer)"),
    "col_distance": ("расстояние до базы", "distance to the KB"),
    "col_score": ("оценка", "score"),
    "col_examples": ("примеры вопросов", "example questions"),
    "mixed": ("смешанная тема: название есть лишь в {share} вопросов — смотрите примеры",
              "mixed topic: its name is in only {share} of its questions — read the examples"),
    "mixed_note": ("Смешанная тема — KMeans объединил вопросы на разные темы; слова названия встречаются меньше чем "
                   "в 30% её вопросов. Читайте примеры.",
                   "A mixed topic: KMeans put questions on different subjects together; the name's words occur in "
                   "fewer than 30% of its questions. Read the examples."),
    "confirmed": ("Подтверждённые пробелы: размечено «нет в базе знаний» ({n})",
                  "Confirmed gaps: labelled 'not in the knowledge base' ({n})"),
    "confirmed_note": ("Реальные вопросы, для которых аналитик подтвердил, что в базе знаний нет ответа (разметка realq).",
                       "Real questions for which an analyst confirmed that the knowledge base has no answer "
                       "(realq labelling)."),
    "col_question": ("вопрос", "question"),
    "col_asked": ("задан раз", "times asked"),
    "col_dataset": ("набор данных", "dataset"),
    "categories": ("Сообщения вне тем (правила, не кластеры)", "Messages outside the topics (rules, not clusters)"),
    "col_category": ("категория", "category"),
    "col_messages": ("сообщений", "messages"),
    "changes": ("Что изменилось", "What changed"),
    "col_status": ("статус", "status"),
    "col_n_change": ("вопросов было → стало", "questions before → now"),
    "col_share_change": ("доля было → стала", "share before → now"),
    "col_new_word": ("новое слово", "new word"),
    "col_example": ("пример вопроса", "example question"),
    "by_month": ("Темы по месяцам (доля вопросов месяца)", "Topics by month (share of the month's questions)"),
    "peaks": ("Сезонные пики", "Seasonal peaks"),
    "col_peak_month": ("месяц пика", "peak month"),
    "col_lift": ("во сколько раз выше обычного", "times above the usual"),
    "never": ("Чанки, которые не попадают в выдачу ни разу ({n})", "Chunks never retrieved ({n})"),
    "footer": ("Журнал реальных пользователей — источник аналитики, а не эталон для метрик поиска.",
               "The real-user log is a source of analytics, not a gold standard for retrieval metrics."),
}


def _t(key: str, lang: str, **values: Any) -> str:
    text = TEXTS[key][0 if lang == "ru" else 1]
    return text.format(**values) if values else text


def _pct(v: Any) -> str:
    return "—" if v is None or pd.isna(v) else f"{100 * float(v):.0f}%"


def _num(v: Any, digits: int = 3) -> str:
    return "—" if v is None or pd.isna(v) else f"{float(v):.{digits}f}"


def _answer_ci_line(m: dict[str, Any], lang: str) -> str:
    ci, acc = m.get("effective_answered_rate_ci"), m.get("answer_classifier_accuracy")
    if not isinstance(ci, dict) or not isinstance(acc, dict) or ci.get("ci_low") is None or acc.get("ci_low") is None:
        return _t("answer_rules_only", lang)
    return _t("answer_ci", lang, value=_pct(ci["value"]), lo=_pct(ci["ci_low"]), hi=_pct(ci["ci_high"]),
              acc=_pct(acc["value"]), acc_lo=_pct(acc["ci_low"]), acc_hi=_pct(acc["ci_high"]), n=acc.get("n"))


def snapshot_label(snap: dict[str, Any] | None, lang: str) -> str:
    """``#id (hash…, taken …)`` of the snapshot the run read (as :attr:`Snapshot.label`)."""
    if not snap:
        return _t("no_snapshot", lang)
    taken = str(snap.get("taken_at") or "")[:16].replace("T", " ")
    return f"#{snap['id']} ({str(snap.get('content_hash') or '')[:12]}{', ' + taken if taken else ''})"


def _context(result: Any, top_n: int, lang: str) -> dict[str, Any]:
    topics = result.topics
    gaps = topics.gaps if topics is not None else pd.DataFrame()
    gaps = gaps[~gaps["off_topic"]] if len(gaps) and "off_topic" in gaps else gaps
    m = result.metrics
    tm = {**m, **(getattr(topics, "metrics", None) or {})}  # the topic step's own metrics: seed ARI min too
    sil = tm.get("best_silhouette")
    return {
        "lang": lang,
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "source": result.source,
        "snapshot": snapshot_label(getattr(result, "snapshot", None), lang),
        "filters": result.filters.describe(),
        "n": result.n_used,
        "emb": result.embeddings.info() if result.embeddings else {},
        "metrics": m,
        "summary": [
            _t("answered", lang, eff=_pct(m.get("effective_answered_rate")), raw=_pct(m.get("answered_rate")),
               declined=m.get("n_declined", "—")),
            _answer_ci_line(m, lang),
            _t("n_topics", lang, k=m.get("n_topics", "—")),
            _t("silhouette", lang, value=_num(sil, 2), verdict=silhouette_verdict(sil, lang)),
            _t("seed_ari", lang, mean=_num(tm.get("seed_ari_mean"), 2), min=_num(tm.get("seed_ari_min"), 2)),
            _t("coverage", lang, k=_pct(m.get("chunk_coverage")), one=_pct(m.get("chunk_coverage@1"))),
        ],
        "gaps": gaps.head(top_n),
        "categories": topics.topics[topics.topics["kind"] == "category"] if topics is not None else pd.DataFrame(),
        "never": result.utilization.never_retrieved if result.utilization is not None else None,
        "confirmed": getattr(result, "confirmed_gaps", None),
        "trends": topics.trends if topics is not None else None,
        "all_gaps": gaps,
    }


def _topic_cell(r: Any, lang: str) -> str:
    """A topic's name, with a warning when the name covers few of its questions (a mixed topic)."""
    name = md.cell(str(r["name"]))
    if r.get("mixed"):
        return f"{name} ({_t('mixed', lang, share=_pct(r.get('name_coverage')))})"
    return name


def _trend_table(trends: TopicTrends, lang: str, months: int = 6, top_n: int = 8) -> tuple[list[str], list[list[str]]]:
    """Share of the month of the largest topics over the last ``months`` months: (header, rows)."""
    m = trends.monthly
    if m.empty:
        return [], []
    last = sorted(m["period"].unique())[-months:]
    top = m[m["period"].isin(last)].groupby("topic")["n"].sum().nlargest(top_n).index
    piv = m[m["topic"].isin(top)].pivot_table(index="topic", columns="period", values="share", fill_value=0.0)
    names = m.drop_duplicates("topic").set_index("topic")["name"]
    rows = [[str(names.get(t, t))] + [_pct(piv.loc[t].get(p, 0.0)) for p in last] for t in top]  # raw names
    return [_t("col_topic", lang)] + last, rows


def _month(n: int, lang: str) -> str:
    return (MONTHS_RU if lang == "ru" else MONTHS_EN)[n - 1]


def _changes_markdown(c: dict[str, Any]) -> list[str]:
    trends: TopicTrends | None = c["trends"]
    if trends is None:
        return []
    lang = c["lang"]
    li = 0 if lang == "ru" else 1
    lines = ["", f"## {_t('changes', lang)}", ""]
    lines += [f"- {x}" for x in summary_lines(trends, gaps=c["all_gaps"], lang=lang, quote=md.literal)]
    moved = trends.changes[trends.changes["status"] != "stable"]
    if len(moved):
        lines += ["", f"| {_t('col_topic', lang)} | {_t('col_status', lang)} | {_t('col_n_change', lang)} | "
                      f"{_t('col_share_change', lang)} | p |", "|---|---|---|---|---|"]
        for _, r in moved.iterrows():
            lines.append(f"| {md.cell(str(r['name']))} | {STATUS_NAMES[r['status']][li]} | {r['n_prev']} → {r['n_now']} | "
                         f"{_pct(r['share_prev'])} → {_pct(r['share_now'])} | "
                         f"{min(r['p_up'], r['p_down']):.3g} |")
    if len(trends.terms):
        lines += ["", f"| {_t('col_new_word', lang)} | {_t('col_n_change', lang)} | {_t('col_example', lang)} |",
                  "|---|---|---|"]
        lines += [f"| {md.cell(str(r['term']))} | {r['n_prev']} → {r['n_now']} | {md.cell(str(r['example']))} |"
                  for _, r in trends.terms.head(10).iterrows()]
    head, rows = _trend_table(trends, lang)
    if rows:
        lines += ["", f"### {_t('by_month', lang)}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join([md.cell(r[0])] + r[1:]) + " |" for r in rows]
    if len(trends.peaks):
        lines += ["", f"### {_t('peaks', lang)}", "",
                  f"| {_t('col_topic', lang)} | {_t('col_peak_month', lang)} | {_t('col_lift', lang)} |", "|---|---|---|"]
        for _, r in trends.peaks.head(10).iterrows():
            lines.append(f"| {md.cell(str(r['name']))} | {_month(int(r['peak_month']), lang)} | ×{r['lift']:.1f} |")
    return lines


def _changes_html(c: dict[str, Any]) -> str:
    trends: TopicTrends | None = c["trends"]
    if trends is None:
        return ""
    lang = c["lang"]
    li = 0 if lang == "ru" else 1
    e = html.escape
    items = "".join(f"<li>{e(x)}</li>" for x in summary_lines(trends, gaps=c["all_gaps"], lang=lang))
    out = f"<h2>{_t('changes', lang)}</h2><ul>{items}</ul>"
    moved = trends.changes[trends.changes["status"] != "stable"]
    if len(moved):
        rows = "".join(
            f"<tr><td>{e(str(r['name']))}</td><td>{STATUS_NAMES[r['status']][li]}</td><td>{r['n_prev']} → {r['n_now']}</td>"
            f"<td>{_pct(r['share_prev'])} → {_pct(r['share_now'])}</td><td>{min(r['p_up'], r['p_down']):.3g}</td></tr>"
            for _, r in moved.iterrows())
        out += (f"<table><tr><th>{_t('col_topic', lang)}</th><th>{_t('col_status', lang)}</th>"
                f"<th>{_t('col_n_change', lang)}</th><th>{_t('col_share_change', lang)}</th><th>p</th></tr>{rows}</table>")
    if len(trends.terms):
        trs = "".join(f"<tr><td>{e(str(r['term']))}</td><td>{r['n_prev']} → {r['n_now']}</td><td>{e(str(r['example']))}</td></tr>"
                      for _, r in trends.terms.head(10).iterrows())
        out += (f"<table><tr><th>{_t('col_new_word', lang)}</th><th>{_t('col_n_change', lang)}</th>"
                f"<th>{_t('col_example', lang)}</th></tr>{trs}</table>")
    head, rows_t = _trend_table(trends, lang)
    if rows_t:
        ths = "".join(f"<th>{e(h)}</th>" for h in head)
        trs = "".join("<tr>" + "".join(f"<td>{e(x)}</td>" for x in r) + "</tr>" for r in rows_t)
        out += f"<h3>{_t('by_month', lang)}</h3><table><tr>{ths}</tr>{trs}</table>"
    if len(trends.peaks):
        trs = "".join(f"<tr><td>{e(str(r['name']))}</td><td>{_month(int(r['peak_month']), lang)}</td>"
                      f"<td>×{r['lift']:.1f}</td></tr>" for _, r in trends.peaks.head(10).iterrows())
        out += (f"<h3>{_t('peaks', lang)}</h3><table><tr><th>{_t('col_topic', lang)}</th><th>{_t('col_peak_month', lang)}"
                f"</th><th>{_t('col_lift', lang)}</th></tr>{trs}</table>")
    return out


def _gap_columns(lang: str) -> list[str]:
    return ["#", _t("col_topic", lang), _t("col_questions", lang), _t("col_answered", lang), _t("col_distance", lang),
            _t("col_score", lang), _t("col_examples", lang)]


def coverage_gap_markdown(result: Any, *, top_n: int = 10, lang: str = "ru") -> str:
    """The report as Markdown in ``lang`` (``ru`` or ``en``; numbers language-neutral). Data (topic names,
    questions, URLs, chunk texts) is written as code spans — HTML, images and links in it are never rendered —
    and the whole text is redacted of secrets."""
    c = _context(result, top_n, lang)
    emb = c["emb"]
    lines = [
        f"# {_t('title', lang)}",
        "",
        f"{_t('generated', lang)} {c['generated']} · {_t('source', lang)} {md.literal(c['source'])} · "
        f"{_t('snapshot', lang)} {md.literal(c['snapshot'])} · {_t('filters', lang)}: "
        f"{md.literal(c['filters']) if c['filters'] else _t('none', lang)}",
        "",
        f"**{_t('n_used', lang)}: n = {c['n']}** ("
        + _t("n_used_note", lang, stored=emb.get("n_stored", "—"), embedded=emb.get("n_embedded", "—"))
        + f" {md.literal(emb.get('model', '—'))}).",
        "",
        *[f"- {x}" for x in c["summary"]],
        "",
        f"## {_t('write_first', lang)}",
        "",
        _t("gap_formula", lang, formula=f"`{GAP_FORMULA}`"),
        "",
        "| " + " | ".join(_gap_columns(lang)) + " |",
        "|---|---|---|---|---|---|---|",
    ]
    for _, r in c["gaps"].iterrows():
        ex = "; ".join(md.cell(str(e)) + (f" ×{int(k)}" if int(k) > 1 else "")
                       for e, k in zip(r["examples"], r["example_counts"], strict=True))
        lines.append(
            f"| {int(r['gap_rank'])} | {_topic_cell(r, lang)} | {int(r['size'])} | {_pct(r['effective_answered_share'])} "
            f"({_pct(r['answered_share'])}) | {_num(r['nearest_distance'])} | {_num(r['gap_score'])} | {ex} |"
        )
    conf = c["confirmed"]
    if conf is not None and len(conf):
        lines += ["", f"## {_t('confirmed', lang, n=len(conf))}", "", _t("confirmed_note", lang), "",
                  f"| {_t('col_question', lang)} | {_t('col_asked', lang)} | {_t('col_dataset', lang)} |", "|---|---|---|"]
        for _, r in conf.iterrows():
            n = "—" if pd.isna(r["n_asked"]) else int(r["n_asked"])
            lines.append(f"| {md.cell(str(r['question']))} | {n} | {md.cell(str(r['dataset']))} |")
    if len(c["categories"]):
        lines += ["", f"## {_t('categories', lang)}", "",
                  f"| {_t('col_category', lang)} | {_t('col_messages', lang)} | {_t('col_answered', lang)} |",
                  "|---|---|---|"]
        for _, r in c["categories"].iterrows():
            lines.append(f"| {md.cell(str(r['name']))} | {int(r['size'])} | {_pct(r['effective_answered_share'])} "
                         f"({_pct(r['answered_share'])}) |")
    mixed = len(c["gaps"]) and c["gaps"].get("mixed", pd.Series(dtype=bool)).any()
    lines += ["", f"_{_t('mixed_note', lang)}_"] if mixed else []
    lines += _changes_markdown(c)
    if c["never"] is not None:
        lines += ["", f"## {_t('never', lang, n=len(c['never']))}", ""]
        for _, r in c["never"].head(20).iterrows():
            lines.append(f"- #{int(r['chunk_id'])} {md.literal(r['url'])}: {md.literal(str(r['text'])[:160] + '…')}")
    lines += ["", f"_{_t('footer', lang)}_", ""]
    return redact("\n".join(lines)) or ""


_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:2rem auto;max-width:1100px;color:#222}
h1{font-size:1.6rem}h2{font-size:1.2rem;margin-top:2rem}table{border-collapse:collapse;width:100%;font-size:.9rem}
th,td{border:1px solid #ddd;padding:.35rem .5rem;vertical-align:top;text-align:left}th{background:#f4f4f4}
.bar{background:#EF553B;height:.7rem;display:inline-block}.muted{color:#666;font-size:.85rem}
code{background:#f4f4f4;padding:0 .2rem}
"""


def coverage_gap_html(result: Any, *, top_n: int = 10, lang: str = "ru") -> str:
    """The report as one self-contained HTML page in ``lang`` (inline CSS bars; no scripts, no CDN); data
    HTML-escaped, the whole page redacted of secrets."""
    c = _context(result, top_n, lang)
    e = html.escape
    max_gap = float(c["gaps"]["gap_score"].max()) if len(c["gaps"]) else 1.0
    rows = []
    for _, r in c["gaps"].iterrows():
        width = int(120 * float(r["gap_score"]) / max_gap) if max_gap else 0
        ex = "<br>".join(e(format_example(str(x), int(k))) for x, k in zip(r["examples"], r["example_counts"], strict=True))
        rows.append(
            f"<tr><td>{int(r['gap_rank'])}</td><td><b>{e(_topic_cell(r, lang))}</b></td><td>{int(r['size'])}</td>"
            f"<td>{_pct(r['effective_answered_share'])} ({_pct(r['answered_share'])})</td><td>{_num(r['nearest_distance'])}</td>"
            f"<td><span class='bar' style='width:{width}px'></span> {_num(r['gap_score'])}</td><td>{ex}</td></tr>"
        )
    cat_rows = "".join(
        f"<tr><td>{e(str(r['name']))}</td><td>{int(r['size'])}</td><td>{_pct(r['effective_answered_share'])} "
        f"({_pct(r['answered_share'])})</td></tr>"
        for _, r in c["categories"].iterrows()
    )
    conf = c["confirmed"]
    confirmed = ""
    if conf is not None and len(conf):
        crow = "".join(
            f"<tr><td>{e(str(r['question']))}</td><td>{'—' if pd.isna(r['n_asked']) else int(r['n_asked'])}</td>"
            f"<td>{e(str(r['dataset']))}</td></tr>"
            for _, r in conf.iterrows()
        )
        confirmed = (f"<h2>{_t('confirmed', lang, n=len(conf))}</h2><p class='muted'>{_t('confirmed_note', lang)}</p>"
                     f"<table><tr><th>{_t('col_question', lang)}</th><th>{_t('col_asked', lang)}</th>"
                     f"<th>{_t('col_dataset', lang)}</th></tr>{crow}</table>")
    never = ""
    if c["never"] is not None:
        items = "".join(
            f"<li>#{int(r['chunk_id'])} <code>{e(str(r['url']))}</code>: {e(str(r['text'])[:200])}…</li>"
            for _, r in c["never"].head(20).iterrows()
        )
        never = f"<h2>{_t('never', lang, n=len(c['never']))}</h2><ul>{items}</ul>"
    emb = c["emb"]
    summary = "".join(f"<li>{e(x)}</li>" for x in c["summary"])
    gap_head = "".join(f"<th>{e(h)}</th>" for h in _gap_columns(lang))
    n_note = e(_t("n_used_note", lang, stored=emb.get("n_stored", "—"), embedded=emb.get("n_embedded", "—")))
    page = f"""<!DOCTYPE html>
<html lang="{'ru' if lang == 'ru' else 'en'}"><head><meta charset="utf-8"><title>{_t('title_short', lang)}</title>
<style>{_CSS}</style></head>
<body>
<h1>{_t('title', lang)}</h1>
<p class="muted">{_t('generated', lang)} {e(c['generated'])} · {_t('source', lang)} <code>{e(str(c['source']))}</code> ·
{_t('snapshot', lang)} <code>{e(c['snapshot'])}</code> · {_t('filters', lang)}: {e(str(c['filters'] or _t('none', lang)))}</p>
<p><b>{_t('n_used', lang)}: n = {c['n']}</b> ({n_note} <code>{e(str(emb.get('model', '—')))}</code>).</p>
<ul>{summary}</ul>
<h2>{_t('write_first', lang)}</h2>
<p class="muted">{e(_t('gap_formula', lang, formula=GAP_FORMULA))}</p>
<table><tr>{gap_head}</tr>{''.join(rows)}</table>
{confirmed}
<h2>{_t('categories', lang)}</h2>
<table><tr><th>{_t('col_category', lang)}</th><th>{_t('col_messages', lang)}</th><th>{_t('col_answered', lang)}</th></tr>
{cat_rows}</table>
{_changes_html(c)}
{never}
<p class="muted">{_t('footer', lang)}</p>
</body></html>
"""
    return redact(page) or ""

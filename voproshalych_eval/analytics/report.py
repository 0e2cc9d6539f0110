"""Coverage-gap report for a product owner: Markdown and a self-contained HTML page (no CDN, no scripts).

What to write next in the knowledge base: the ranked coverage gaps (topics with many questions, a low
answered share or a large distance to any chunk), each with its size, answered share, distance and
example questions (near-duplicates folded, with their repeat count "×14"), plus the n the analysis used, the
raw and the effective answered rate (declines in disguise removed), the formula, and the never-retrieved
chunks.
"""

from __future__ import annotations

import html
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from voproshalych_eval import markdown as md
from voproshalych_eval.analytics.topic_trends import MONTHS_RU, STATUS_NAMES, TopicTrends, summary_lines
from voproshalych_eval.analytics.topics import GAP_FORMULA, format_example
from voproshalych_eval.redaction import redact


def _pct(v: Any) -> str:
    return "—" if v is None or pd.isna(v) else f"{100 * float(v):.0f}%"


def _num(v: Any, digits: int = 3) -> str:
    return "—" if v is None or pd.isna(v) else f"{float(v):.{digits}f}"


def _context(result: Any, top_n: int) -> dict[str, Any]:
    topics = result.topics
    gaps = topics.gaps if topics is not None else pd.DataFrame()
    gaps = gaps[~gaps["off_topic"]] if len(gaps) and "off_topic" in gaps else gaps
    return {
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "source": result.source,
        "filters": result.filters.describe(),
        "n": result.n_used,
        "emb": result.embeddings.info() if result.embeddings else {},
        "metrics": result.metrics,
        "gaps": gaps.head(top_n),
        "categories": topics.topics[topics.topics["kind"] == "category"] if topics is not None else pd.DataFrame(),
        "never": result.utilization.never_retrieved if result.utilization is not None else None,
        "confirmed": getattr(result, "confirmed_gaps", None),
        "trends": topics.trends if topics is not None else None,
        "all_gaps": gaps,
    }


def _topic_cell(r: Any) -> str:
    """A topic's name, with a warning when the name covers few of its questions (a mixed topic)."""
    name = md.cell(str(r["name"]))
    if r.get("mixed"):
        return f"{name} (смешанная тема: название есть лишь в {_pct(r.get('name_coverage'))} вопросов — смотрите примеры)"
    return name


def _trend_table(trends: TopicTrends, months: int = 6, top_n: int = 8) -> tuple[list[str], list[list[str]]]:
    """Share of the month of the largest topics over the last ``months`` months: (header, rows)."""
    m = trends.monthly
    if m.empty:
        return [], []
    last = sorted(m["period"].unique())[-months:]
    top = m[m["period"].isin(last)].groupby("topic")["n"].sum().nlargest(top_n).index
    piv = m[m["topic"].isin(top)].pivot_table(index="topic", columns="period", values="share", fill_value=0.0)
    names = m.drop_duplicates("topic").set_index("topic")["name"]
    rows = [[str(names.get(t, t))] + [_pct(piv.loc[t].get(p, 0.0)) for p in last] for t in top]  # raw names
    return ["тема"] + last, rows


def _changes_markdown(c: dict[str, Any]) -> list[str]:
    trends: TopicTrends | None = c["trends"]
    if trends is None:
        return []
    lines = ["", "## Что изменилось", ""]
    lines += [f"- {x}" for x in summary_lines(trends, gaps=c["all_gaps"], lang="ru", quote=md.literal)]
    moved = trends.changes[trends.changes["status"] != "stable"]
    if len(moved):
        lines += ["", "| тема | статус | вопросов было → стало | доля было → стала | p |", "|---|---|---|---|---|"]
        for _, r in moved.iterrows():
            lines.append(f"| {md.cell(str(r['name']))} | {STATUS_NAMES[r['status']][0]} | {r['n_prev']} → {r['n_now']} | "
                         f"{_pct(r['share_prev'])} → {_pct(r['share_now'])} | "
                         f"{min(r['p_up'], r['p_down']):.3g} |")
    if len(trends.terms):
        lines += ["", "| новое слово | вопросов было → стало | пример вопроса |", "|---|---|---|"]
        lines += [f"| {md.cell(str(r['term']))} | {r['n_prev']} → {r['n_now']} | {md.cell(str(r['example']))} |"
                  for _, r in trends.terms.head(10).iterrows()]
    head, rows = _trend_table(trends)
    if rows:
        lines += ["", "### Темы по месяцам (доля вопросов месяца)", "", "| " + " | ".join(head) + " |",
                  "|" + "---|" * len(head)]
        lines += ["| " + " | ".join([md.cell(r[0])] + r[1:]) + " |" for r in rows]
    if len(trends.peaks):
        lines += ["", "### Сезонные пики", "", "| тема | месяц пика | во сколько раз выше обычного |", "|---|---|---|"]
        for _, r in trends.peaks.head(10).iterrows():
            lines.append(f"| {md.cell(str(r['name']))} | {MONTHS_RU[int(r['peak_month']) - 1]} | ×{r['lift']:.1f} |")
    return lines


def _changes_html(c: dict[str, Any]) -> str:
    trends: TopicTrends | None = c["trends"]
    if trends is None:
        return ""
    e = html.escape
    items = "".join(f"<li>{e(x)}</li>" for x in summary_lines(trends, gaps=c["all_gaps"], lang="ru"))
    out = f"<h2>Что изменилось</h2><ul>{items}</ul>"
    moved = trends.changes[trends.changes["status"] != "stable"]
    if len(moved):
        rows = "".join(
            f"<tr><td>{e(str(r['name']))}</td><td>{STATUS_NAMES[r['status']][0]}</td><td>{r['n_prev']} → {r['n_now']}</td>"
            f"<td>{_pct(r['share_prev'])} → {_pct(r['share_now'])}</td><td>{min(r['p_up'], r['p_down']):.3g}</td></tr>"
            for _, r in moved.iterrows())
        out += ("<table><tr><th>тема</th><th>статус</th><th>вопросов было → стало</th><th>доля было → стала</th>"
                f"<th>p</th></tr>{rows}</table>")
    if len(trends.terms):
        trs = "".join(f"<tr><td>{e(str(r['term']))}</td><td>{r['n_prev']} → {r['n_now']}</td><td>{e(str(r['example']))}</td></tr>"
                      for _, r in trends.terms.head(10).iterrows())
        out += f"<table><tr><th>новое слово</th><th>вопросов было → стало</th><th>пример вопроса</th></tr>{trs}</table>"
    head, rows_t = _trend_table(trends)
    if rows_t:
        ths = "".join(f"<th>{e(h)}</th>" for h in head)
        trs = "".join("<tr>" + "".join(f"<td>{e(x)}</td>" for x in r) + "</tr>" for r in rows_t)
        out += f"<h3>Темы по месяцам (доля вопросов месяца)</h3><table><tr>{ths}</tr>{trs}</table>"
    if len(trends.peaks):
        trs = "".join(f"<tr><td>{e(str(r['name']))}</td><td>{MONTHS_RU[int(r['peak_month']) - 1]}</td>"
                      f"<td>×{r['lift']:.1f}</td></tr>" for _, r in trends.peaks.head(10).iterrows())
        out += f"<h3>Сезонные пики</h3><table><tr><th>тема</th><th>месяц пика</th><th>во сколько раз выше обычного</th></tr>{trs}</table>"
    return out


def coverage_gap_markdown(result: Any, *, top_n: int = 10) -> str:
    """The report as Markdown (Russian headings, numbers language-neutral). Data (topic names, questions,
    URLs, chunk texts) is written as code spans — HTML, images and links in it are never rendered —
    and the whole text is redacted of secrets."""
    c = _context(result, top_n)
    m = c["metrics"]
    lines = [
        "# Вопрошалыч: пробелы в покрытии базы знаний",
        "",
        f"Сформировано {c['generated']} · источник {md.literal(c['source'])} · фильтры: "
        f"{md.literal(c['filters']) if c['filters'] else 'нет'}",
        "",
        f"**Использовано вопросов: n = {c['n']}** (весь журнал после фильтров; сохранённых векторов "
        f"{c['emb'].get('n_stored', '—')}, досчитано {c['emb'].get('n_embedded', '—')} моделью "
        f"{md.literal(c['emb'].get('model', '—'))}).",
        "",
        f"- Доля отвеченных: {_pct(m.get('effective_answered_rate'))} фактически (настоящие ответы) · "
        f"{_pct(m.get('answered_rate'))} по непустому ответу; отказов под видом ответа: {m.get('n_declined', '—')}",
        f"- Тем (KMeans, k по силуэту): {m.get('n_topics', '—')}",
        f"- Покрытие базы знаний (чанки в top-k / top-1): {_pct(m.get('chunk_coverage'))} / "
        f"{_pct(m.get('chunk_coverage@1'))}",
        "",
        "## Что дописать в первую очередь",
        "",
        f"Оценка пробела: `{GAP_FORMULA}`. Больше — важнее.",
        "",
        "| # | тема | вопросов | отвечено фактически (непустой ответ) | расстояние до базы | оценка | примеры вопросов |",
        "|---|---|---|---|---|---|---|",
    ]
    for _, r in c["gaps"].iterrows():
        ex = "; ".join(md.cell(str(e)) + (f" ×{int(k)}" if int(k) > 1 else "")
                       for e, k in zip(r["examples"], r["example_counts"], strict=True))
        lines.append(
            f"| {int(r['gap_rank'])} | {_topic_cell(r)} | {int(r['size'])} | {_pct(r['effective_answered_share'])} "
            f"({_pct(r['answered_share'])}) | {_num(r['nearest_distance'])} | {_num(r['gap_score'])} | {ex} |"
        )
    conf = c["confirmed"]
    if conf is not None and len(conf):
        lines += ["", f"## Подтверждённые пробелы: размечено «нет в базе знаний» ({len(conf)})", "",
                  "Реальные вопросы, для которых аналитик подтвердил, что в базе знаний нет ответа (разметка realq).", "",
                  "| вопрос | задан раз | набор данных |", "|---|---|---|"]
        for _, r in conf.iterrows():
            n = "—" if pd.isna(r["n_asked"]) else int(r["n_asked"])
            lines.append(f"| {md.cell(str(r['question']))} | {n} | {md.cell(str(r['dataset']))} |")
    if len(c["categories"]):
        lines += ["", "## Сообщения вне тем (правила, не кластеры)", "",
                  "| категория | сообщений | отвечено фактически (непустой ответ) |", "|---|---|---|"]
        for _, r in c["categories"].iterrows():
            lines.append(f"| {md.cell(str(r['name']))} | {int(r['size'])} | {_pct(r['effective_answered_share'])} "
                         f"({_pct(r['answered_share'])}) |")
    lines += ["", "_Смешанная тема — KMeans объединил вопросы на разные темы; слова названия встречаются меньше чем в "
              "30% её вопросов. Читайте примеры._"] if len(c["gaps"]) and c["gaps"].get("mixed", pd.Series(dtype=bool)).any() else []
    lines += _changes_markdown(c)
    if c["never"] is not None:
        lines += ["", f"## Чанки, которые не попадают в выдачу ни разу ({len(c['never'])})", ""]
        for _, r in c["never"].head(20).iterrows():
            lines.append(f"- #{int(r['chunk_id'])} {md.literal(r['url'])}: {md.literal(str(r['text'])[:160] + '…')}")
    lines += ["", "_Журнал реальных пользователей — источник аналитики, а не эталон для метрик поиска._", ""]
    return redact("\n".join(lines)) or ""


_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:2rem auto;max-width:1100px;color:#222}
h1{font-size:1.6rem}h2{font-size:1.2rem;margin-top:2rem}table{border-collapse:collapse;width:100%;font-size:.9rem}
th,td{border:1px solid #ddd;padding:.35rem .5rem;vertical-align:top;text-align:left}th{background:#f4f4f4}
.bar{background:#EF553B;height:.7rem;display:inline-block}.muted{color:#666;font-size:.85rem}
code{background:#f4f4f4;padding:0 .2rem}
"""


def coverage_gap_html(result: Any, *, top_n: int = 10) -> str:
    """The report as one self-contained HTML page (inline CSS bars; no scripts, no CDN); data HTML-escaped,
    the whole page redacted of secrets."""
    c = _context(result, top_n)
    m = c["metrics"]
    e = html.escape
    max_gap = float(c["gaps"]["gap_score"].max()) if len(c["gaps"]) else 1.0
    rows = []
    for _, r in c["gaps"].iterrows():
        width = int(120 * float(r["gap_score"]) / max_gap) if max_gap else 0
        ex = "<br>".join(e(format_example(str(x), int(k))) for x, k in zip(r["examples"], r["example_counts"], strict=True))
        rows.append(
            f"<tr><td>{int(r['gap_rank'])}</td><td><b>{e(_topic_cell(r))}</b></td><td>{int(r['size'])}</td>"
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
        confirmed = (f"<h2>Подтверждённые пробелы: размечено «нет в базе знаний» ({len(conf)})</h2>"
                     "<p class='muted'>Реальные вопросы, для которых аналитик подтвердил, что в базе знаний нет ответа "
                     "(разметка realq).</p><table><tr><th>вопрос</th><th>задан раз</th><th>набор данных</th></tr>"
                     f"{crow}</table>")
    never = ""
    if c["never"] is not None:
        items = "".join(
            f"<li>#{int(r['chunk_id'])} <code>{e(str(r['url']))}</code>: {e(str(r['text'])[:200])}…</li>"
            for _, r in c["never"].head(20).iterrows()
        )
        never = f"<h2>Чанки, которые не попадают в выдачу ни разу ({len(c['never'])})</h2><ul>{items}</ul>"
    page = f"""<!DOCTYPE html>
<html lang="ru"><head><meta charset="utf-8"><title>Вопрошалыч: пробелы в покрытии</title><style>{_CSS}</style></head>
<body>
<h1>Вопрошалыч: пробелы в покрытии базы знаний</h1>
<p class="muted">Сформировано {e(c['generated'])} · источник <code>{e(str(c['source']))}</code> ·
фильтры: {e(str(c['filters'] or 'нет'))}</p>
<p><b>Использовано вопросов: n = {c['n']}</b> (весь журнал после фильтров; сохранённых векторов
{c['emb'].get('n_stored', '—')}, досчитано {c['emb'].get('n_embedded', '—')} моделью
<code>{e(str(c['emb'].get('model', '—')))}</code>).</p>
<ul><li>Доля отвеченных: {_pct(m.get('effective_answered_rate'))} фактически (настоящие ответы) ·
{_pct(m.get('answered_rate'))} по непустому ответу; отказов под видом ответа: {m.get('n_declined', '—')}</li>
<li>Тем (KMeans, k по силуэту): {m.get('n_topics', '—')}</li>
<li>Покрытие базы знаний (чанки в top-k / top-1): {_pct(m.get('chunk_coverage'))} / {_pct(m.get('chunk_coverage@1'))}</li></ul>
<h2>Что дописать в первую очередь</h2>
<p class="muted">Оценка пробела: <code>{e(GAP_FORMULA)}</code>. Больше — важнее.</p>
<table><tr><th>#</th><th>тема</th><th>вопросов</th><th>отвечено фактически (непустой ответ)</th><th>расстояние до базы</th><th>оценка</th>
<th>примеры вопросов</th></tr>{''.join(rows)}</table>
{confirmed}
<h2>Сообщения вне тем (правила, не кластеры)</h2>
<table><tr><th>категория</th><th>сообщений</th><th>отвечено фактически (непустой ответ)</th></tr>{cat_rows}</table>
{_changes_html(c)}
{never}
<p class="muted">Журнал реальных пользователей — источник аналитики, а не эталон для метрик поиска.</p>
</body></html>
"""
    return redact(page) or ""

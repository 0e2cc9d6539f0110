"""Coverage-gap report for a product owner: Markdown and a self-contained HTML page (no CDN, no scripts).

What to write next in the knowledge base: the ranked coverage gaps (topics with many questions, a low
answered share or a large distance to any chunk), each with its size, answered share, distance and
example questions, plus the n the analysis used, the formula, and the never-retrieved chunks.
"""

from __future__ import annotations

import html
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from voproshalych_eval import markdown as md
from voproshalych_eval.analytics.topics import GAP_FORMULA
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
    }


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
        f"- Доля отвеченных: {_pct(m.get('answered_rate'))}",
        f"- Тем (KMeans, k по силуэту): {m.get('n_topics', '—')}",
        f"- Покрытие базы знаний (чанки в top-k / top-1): {_pct(m.get('chunk_coverage'))} / "
        f"{_pct(m.get('chunk_coverage@1'))}",
        "",
        "## Что дописать в первую очередь",
        "",
        f"Оценка пробела: `{GAP_FORMULA}`. Больше — важнее.",
        "",
        "| # | тема | вопросов | отвечено | расстояние до базы | оценка | примеры вопросов |",
        "|---|---|---|---|---|---|---|",
    ]
    for _, r in c["gaps"].iterrows():
        ex = "; ".join(md.cell(str(e)) for e in r["examples"])
        lines.append(
            f"| {int(r['gap_rank'])} | {md.cell(str(r['name']))} | {int(r['size'])} | {_pct(r['answered_share'])} | "
            f"{_num(r['nearest_distance'])} | {_num(r['gap_score'])} | {ex} |"
        )
    conf = c["confirmed"]
    if conf is not None and len(conf):
        lines += ["", f"## Подтверждённые пробелы: размечено «нет в базе знаний» ({len(conf)})", "",
                  "Реальные вопросы, для которых аналитик подтвердил, что в базе знаний нет ответа (разметка realq).", "",
                  "| вопрос | задан раз | набор данных |", "|---|---|---|"]
        for _, r in conf.iterrows():
            n = "—" if pd.isna(r["n_asked"]) else int(r["n_asked"])
            lines.append(f"| {str(r['question']).replace('|', '/')} | {n} | {r['dataset']} |")
    if len(c["categories"]):
        lines += ["", "## Сообщения вне тем (правила, не кластеры)", "", "| категория | сообщений | отвечено |",
                  "|---|---|---|"]
        for _, r in c["categories"].iterrows():
            lines.append(f"| {md.cell(str(r['name']))} | {int(r['size'])} | {_pct(r['answered_share'])} |")
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
        ex = "<br>".join(e(str(x)) for x in r["examples"])
        rows.append(
            f"<tr><td>{int(r['gap_rank'])}</td><td><b>{e(str(r['name']))}</b></td><td>{int(r['size'])}</td>"
            f"<td>{_pct(r['answered_share'])}</td><td>{_num(r['nearest_distance'])}</td>"
            f"<td><span class='bar' style='width:{width}px'></span> {_num(r['gap_score'])}</td><td>{ex}</td></tr>"
        )
    cat_rows = "".join(
        f"<tr><td>{e(str(r['name']))}</td><td>{int(r['size'])}</td><td>{_pct(r['answered_share'])}</td></tr>"
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
<ul><li>Доля отвеченных: {_pct(m.get('answered_rate'))}</li>
<li>Тем (KMeans, k по силуэту): {m.get('n_topics', '—')}</li>
<li>Покрытие базы знаний (чанки в top-k / top-1): {_pct(m.get('chunk_coverage'))} / {_pct(m.get('chunk_coverage@1'))}</li></ul>
<h2>Что дописать в первую очередь</h2>
<p class="muted">Оценка пробела: <code>{e(GAP_FORMULA)}</code>. Больше — важнее.</p>
<table><tr><th>#</th><th>тема</th><th>вопросов</th><th>отвечено</th><th>расстояние до базы</th><th>оценка</th>
<th>примеры вопросов</th></tr>{''.join(rows)}</table>
{confirmed}
<h2>Сообщения вне тем (правила, не кластеры)</h2>
<table><tr><th>категория</th><th>сообщений</th><th>отвечено</th></tr>{cat_rows}</table>
{never}
<p class="muted">Журнал реальных пользователей — источник аналитики, а не эталон для метрик поиска.</p>
</body></html>
"""
    return redact(page) or ""

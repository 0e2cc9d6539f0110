"""Run reports: Markdown, self-contained HTML (plots inlined, no CDN), JSON and CSV.

All formats are rendered from :func:`voproshalych_eval.runs.export_data` — metadata (dataset hash, models,
prompts, parameters, code version, who/when), aggregates with 95% CIs and failures, the baseline status
with its rule, the failed items and the per-item table — so they never disagree. The HTML embeds
plotly.js once (``include_plotlyjs=True``) and loads nothing from the network: it can be attached to a
release or a thesis chapter and opened offline.
"""

from __future__ import annotations

import html
import io
import json
from typing import Any

import pandas as pd
from sqlalchemy import Engine

from voproshalych_eval import markdown as md
from voproshalych_eval.baselines import STATUS_ICONS, STATUS_LABELS

FORMATS = ("json", "md", "html", "csv")
CSV_PARTS = ("items", "metrics")
_MAX_ITEMS_MD = 200


def _fmt(v: Any, digits: int = 4) -> str:
    if v is None or (isinstance(v, float) and pd.isna(v)):
        return "—"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    if isinstance(v, dict | list):
        return json.dumps(v, ensure_ascii=False)
    return str(v)


_META_FIELDS = ("id", "tier", "label", "state", "dataset_name", "dataset_hash", "models", "prompts", "params",
                "code_version", "created_by", "started_at", "finished_at", "offline", "n_items_total",
                "n_items_done", "n_items_failed", "error")
_METRIC_COLS = ["metric", "label", "value", "n", "n_failed", "n_partial", "ci_low", "ci_high", "baseline", "scale",
                "direction", "status", "reading"]


def _with_catalog(rows: list[dict[str, Any]], lang: str) -> list[dict[str, Any]]:
    """Metric rows with their catalog label and the seed's reading of the value (where the seed gives bands)."""
    from voproshalych_eval.metrics import catalog

    out = []
    for row in rows:
        spec = catalog.get(str(row.get("metric")))
        value = row.get("value")
        out.append({**row, "label": catalog.label(str(row.get("metric")), lang),
                    "reading": spec.band(value, lang) if spec is not None and isinstance(value, int | float) else None})
    return out


def _status_text(status: str, lang: str) -> str:
    ru, en = STATUS_LABELS.get(status, (status, status))
    return f"{STATUS_ICONS.get(status, '')} {en if lang == 'en' else ru}"


def _title(data: dict[str, Any]) -> str:
    r = data["run"]
    return f"Run #{r['id']} · {r['tier']}" + (f" · {r['label']}" if r.get("label") else "")


def _item_cols(items: list[dict[str, Any]]) -> list[str]:
    cols: list[str] = []
    for row in items[:50]:
        for c in row:
            if c not in cols and c != "created_at":
                cols.append(c)
    return cols[:12]


def notes(data: dict[str, Any], *, lang: str = "en") -> list[str]:
    """Sentences a reader must see before the numbers: how a run with outcomes (a bot API's declines) was
    scored and whether contexts were reconstructed (plain text, built from counts only)."""
    m = data.get("raw_metrics") or {}
    out: list[str] = []
    if "n_answered" in m and "n_items" in m:
        n, a = int(m["n_items"] or 0), int(m["n_answered"] or 0)
        nf, nb, ne = (int(m.get(k) or 0) for k in ("n_not_found", "n_banned", "n_error"))
        out.append(
            f"Judge and overlap metrics are over the {a} answered items of {n}; declines (not found {nf}, "
            f"banned {nb}) and request errors ({ne}) are outcomes counted beside them."
            if lang == "en" else
            f"Метрики судей и совпадения — по {a} вопросам с ответом из {n}; отказы («не найдено» {nf}, "
            f"запрет {nb}) и ошибки запроса ({ne}) — исходы, посчитанные рядом."
        )
    if m.get("n_context_reconstructed"):
        k = int(m["n_context_reconstructed"])
        out.append(
            f"Context reconstructed from the knowledge base for {k} answered items: the API returned only a page "
            "URL, so groundedness was judged on that page's chunks."
            if lang == "en" else
            f"Контекст восстановлен из базы знаний для {k} ответов: API вернул только URL страницы, "
            "обоснованность оценена по чанкам этой страницы."
        )
    return out


def to_markdown(data: dict[str, Any], *, lang: str = "en") -> str:
    """The report as Markdown (tables; the per-item table is cut to the first 200 rows, noted).

    Every data field (questions, answers, labels, errors...) is a code span (:mod:`voproshalych_eval.markdown`):
    HTML, images and links from the data are shown as text, never rendered."""
    r = data["run"]
    status = data["baseline_status"]
    title = f"Run #{r['id']} · {r['tier']}" + (f" · {md.literal(r['label'])}" if r.get("label") else "")
    parts = [f"# {title}\n"]
    if r.get("offline"):
        parts.append("> ⚠️ Offline substitutes (heuristic judge / extractive generator) produced these numbers.\n")
    parts.extend(f"> ℹ️ {line}\n" for line in notes(data, lang=lang))
    parts.append("## Metadata\n")
    parts.append(md.table([{"field": k, "value": r.get(k)} for k in _META_FIELDS], ["field", "value"]))
    parts.append(f"\n## Baseline status: {_status_text(status['status'], lang)}\n")
    parts.append((status["rule_en"] if lang == "en" else status["rule_ru"]) + "\n")
    parts.append("\n## Aggregates (95% CI)\n")
    parts.append(md.table(_with_catalog(data["metrics"], lang), _METRIC_COLS))
    parts.append(f"\n## Failures ({len(data['failures'])})\n")
    parts.append(md.table(data["failures"], ["item_key", "error"]))
    items = data["items"]
    parts.append(f"\n## Items ({len(items)})\n")
    if len(items) > _MAX_ITEMS_MD:
        parts.append(f"_First {_MAX_ITEMS_MD} of {len(items)} rows; the full table is in the CSV/JSON export._\n\n")
    parts.append(md.table(items[:_MAX_ITEMS_MD], _item_cols(items)))
    return "\n".join(parts)


def _html_table(rows: list[dict[str, Any]], cols: list[str], *, max_rows: int | None = None) -> str:
    if not rows:
        return "<p><em>—</em></p>"
    shown = rows if max_rows is None else rows[:max_rows]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_fmt(row.get(c)))}</td>" for c in cols) + "</tr>" for row in shown
    )
    note = "" if len(shown) == len(rows) else f"<p><em>First {len(shown)} of {len(rows)} rows.</em></p>"
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{note}"


def figures(data: dict[str, Any]) -> list[Any]:
    """The report's plots: aggregates with CIs against baselines; the distribution of the first per-item metric."""
    from voproshalych_eval.plots.runs import metrics_figure

    figs = []
    metrics = pd.DataFrame(data["metrics"])
    if len(metrics) and metrics["value"].notna().any():
        figs.append(metrics_figure(metrics, title="Aggregates with 95% CI (◇ baseline)"))
    items = pd.DataFrame(data["items"])
    if len(items):
        from voproshalych_eval.runs import numeric_item_fields

        fields = numeric_item_fields(items.set_index("item_key") if "item_key" in items else items)
        if fields:
            import plotly.graph_objects as go

            f = fields[0]
            fig = go.Figure(go.Histogram(x=pd.to_numeric(items[f], errors="coerce").dropna(), nbinsx=30))
            fig.update_layout(title=f"Per-item distribution: {f}", height=300, margin={"l": 40, "r": 20, "t": 50, "b": 40})
            figs.append(fig)
    return figs


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem auto;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:.5rem 0 1.5rem;font-size:.85rem}
th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;vertical-align:top;max-width:420px;overflow-wrap:anywhere}
th{background:#f3f3f3}.badge{font-size:1.1rem;font-weight:600}.warn{background:#fff4d6;padding:.5rem;border-radius:4px}
"""


def to_html(data: dict[str, Any], *, lang: str = "en") -> str:
    """A self-contained HTML page: plotly.js inlined once, no external script, stylesheet or font."""
    r = data["run"]
    status = data["baseline_status"]
    figs = figures(data)
    plots = "".join(
        fig.to_html(full_html=False, include_plotlyjs=(i == 0), config={"displaylogo": False})
        for i, fig in enumerate(figs)
    )
    rule = html.escape(status["rule_en"] if lang == "en" else status["rule_ru"]).replace("**", "")
    items = data["items"]
    body = [
        f"<h1>{html.escape(_title(data))}</h1>",
        '<p class="warn">⚠️ Offline substitutes produced these numbers.</p>' if r.get("offline") else "",
        *(f'<p class="warn">ℹ️ {html.escape(line)}</p>' for line in notes(data, lang=lang)),
        "<h2>Metadata</h2>",
        _html_table([{"field": k, "value": r.get(k)} for k in _META_FIELDS], ["field", "value"]),
        f'<h2>Baseline status: <span class="badge">{html.escape(_status_text(status["status"], lang))}</span></h2>',
        f"<p>{rule}</p>",
        "<h2>Aggregates (95% CI)</h2>",
        _html_table(_with_catalog(data["metrics"], lang), _METRIC_COLS),
        plots,
        f"<h2>Failures ({len(data['failures'])})</h2>",
        _html_table(data["failures"], ["item_key", "error"]),
        f"<h2>Items ({len(items)})</h2>",
        _html_table(items, _item_cols(items), max_rows=1000),
    ]
    return (
        "<!DOCTYPE html>\n<html lang=\"" + ("en" if lang == "en" else "ru") + "\"><head><meta charset=\"utf-8\">"
        f"<title>{html.escape(_title(data))}</title><style>{_CSS}</style></head><body>"
        + "\n".join(body)
        + "</body></html>\n"
    )


def to_json(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, indent=1)


def to_csv(data: dict[str, Any], *, part: str = "items") -> str:
    """One table as CSV: ``items`` (per-item results, nested fields dotted) or ``metrics`` (aggregates
    with CIs, baselines and statuses). Every row carries ``run_id`` so tables of several runs can be
    concatenated."""
    if part not in CSV_PARTS:
        raise ValueError(f"Unknown CSV part {part!r}: use {' or '.join(CSV_PARTS)}.")
    rows = data["items"] if part == "items" else data["metrics"]
    df = pd.DataFrame(rows)
    df.insert(0, "run_id", data["run"]["id"])
    for col in df.columns:
        if df[col].map(lambda v: isinstance(v, dict | list)).any():
            df[col] = df[col].map(lambda v: json.dumps(v, ensure_ascii=False) if isinstance(v, dict | list) else v)
    buf = io.StringIO()
    df.to_csv(buf, index=False)
    return buf.getvalue()


def render(data: dict[str, Any], fmt: str, *, lang: str = "en", part: str = "items") -> str:
    """The report of ``data`` (from ``runs.export_data``) in ``fmt``: json, md, html or csv.

    Every string of ``data`` is redacted first (configured keys, credentials in URLs, auth headers)."""
    from voproshalych_eval.redaction import redact_obj

    data = redact_obj(data)
    if fmt == "json":
        return to_json(data)
    if fmt == "md":
        return to_markdown(data, lang=lang)
    if fmt == "html":
        return to_html(data, lang=lang)
    if fmt == "csv":
        return to_csv(data, part=part)
    raise ValueError(f"Unknown format {fmt!r}: use one of {', '.join(FORMATS)}.")


def run_report(engine: Engine, run_id: int, fmt: str, *, lang: str = "en", part: str = "items") -> str:
    """Export one run in ``fmt`` (json, md, html, csv)."""
    from voproshalych_eval.runs import export_data

    return render(export_data(engine, run_id), fmt, lang=lang, part=part)

"""Run reports: Markdown, self-contained HTML (plots inlined, no CDN), JSON and CSV.

All formats are rendered from :func:`voproshalych_eval.engine.runs.export_data` — metadata (dataset hash, models,
prompts, parameters, code version, who/when), aggregates with 95% CIs and failures, the baseline status
with its rule, the failed items and the per-item table — so they never disagree. Markdown and HTML are
written in the chosen language (``lang``: the app passes its own) and open with a summary a person reads
first — the verdict against the baselines (or "offline — not compared"), what was evaluated, the
configuration in words, the dataset, when, the items, the key metrics with their labels and numbers
formatted by kind — and keep hashes, parameters and prompts for the technical details at the end. The HTML embeds
plotly.js once (``include_plotlyjs=True``) and loads nothing from the network: it can be attached to a
release or a thesis chapter and opened offline.
"""

from __future__ import annotations

import html
import json
from typing import Any

import pandas as pd
from sqlalchemy import Engine

from voproshalych_eval import markdown as md
from voproshalych_eval.datasets.files import dataframe_csv
from voproshalych_eval.engine.baselines import STATUS_ICONS, STATUS_LABELS
from voproshalych_eval.engine.describe import config_words, models_words, param_rows, tier_title, when
from voproshalych_eval.engine.runs import STATE_LABELS, export_data, get_run, numeric_item_fields
from voproshalych_eval.field_words import column_header, value_word
from voproshalych_eval.jsonable import jsonable
from voproshalych_eval.judges.agreement import judge_warnings
from voproshalych_eval.masking import mask_personal_data as mask
from voproshalych_eval.metrics import catalog
from voproshalych_eval.metrics.formatting import format_seconds, format_value
from voproshalych_eval.plans import SPECS
from voproshalych_eval.redaction import redact_obj

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


_MAX_ITEMS_HTML = 1000

# ------------------------------------------------------------------------------------------ the document
# A report is built once as a list of sections in the report's language, then written as Markdown or HTML:
# both formats say the same thing. A block is ("p", text) | ("warn", text[, data]) | ("dl", [(term, value)]) |
# ("table", headers, rows, note) | ("figures",). Texts of ours are plain; table cells that come from the
# data (questions, answers, errors, names) are escaped by the writer.

_WORDS: dict[str, tuple[str, str]] = {
    "title": ("Отчёт о запуске", "Run report"),
    "summary": ("Кратко", "Summary"),
    "verdict": ("Вердикт относительно базовых уровней", "Verdict against the baselines"),
    "what": ("Что оценивалось", "What was evaluated"),
    "config": ("Конфигурация", "Configuration"),
    "dataset": ("Набор данных", "Dataset"),
    "when": ("Когда", "When"),
    "duration": ("Длительность", "Duration"),
    "state": ("Состояние", "State"),
    "items": ("Элементы", "Items"),
    "items_line": ("{done} выполнено, {failed} со сбоем, всего {total}", "{done} done, {failed} failed, {total} in all"),
    "key_metrics": ("Ключевые метрики", "Key metrics"),
    "all_metrics": ("Все метрики (95% доверительный интервал)", "All metrics (95% confidence interval)"),
    "rule": ("Правило статуса", "Status rule"),
    "failures": ("Сбои", "Failures"),
    "item_rows": ("Элементы", "Items"),
    "tech": ("Технические подробности", "Technical details"),
    "figures": ("Графики", "Charts"),
    "first_rows": ("Первые {n} из {total} строк; полная таблица — в выгрузке CSV/JSON.",
                   "First {n} of {total} rows; the full table is in the CSV/JSON export."),
    "offline": ("⚠️ Числа получены офлайн-заменителями (эвристический судья / извлекающий генератор), а не LLM: "
                "они не сравниваются с базовыми уровнями.",
                "⚠️ These numbers come from offline substitutes (heuristic judge / extractive generator), not an LLM: "
                "they are not compared to the baselines."),
    "mixed": ("⚠️ Смешанный запуск: продолжен при другой конфигурации; числа не принадлежат одной конфигурации.",
              "⚠️ Mixed run: resumed under another configuration; its numbers do not belong to one configuration."),
    "error": ("Ошибка запуска", "Run error"),
    # table headers
    "h_metric": ("Метрика", "Metric"), "h_key": ("Ключ", "Key"), "h_value": ("Значение", "Value"),
    "h_ci": ("95% ДИ", "95% CI"), "h_n": ("n", "n"), "h_failed": ("Сбоев", "Failed"),
    "h_baseline": ("Базовый уровень", "Baseline"), "h_status": ("Статус", "Status"), "h_scale": ("Шкала", "Scale"),
    "h_better": ("Лучше, когда", "Better when"), "h_reading": ("Оценка по методике", "Methodology's reading"),
    "h_item": ("Элемент", "Item"), "h_error": ("Ошибка", "Error"),
    "higher": ("больше", "higher"), "lower": ("меньше", "lower"), "none": ("—", "—"),
    # technical details
    "t_id": ("Запуск", "Run"), "t_label": ("Метка", "Label"), "t_hash": ("Хэш набора данных", "Dataset hash"),
    "t_models": ("Модели", "Models"), "t_prompts": ("Промпты (хэши)", "Prompts (hashes)"),
    "t_code": ("Версия кода", "Code version"), "t_by": ("Запустил", "Started by"), "t_started": ("Начат", "Started"),
    "t_finished": ("Завершён", "Finished"), "t_params": ("Параметры", "Parameters"),
}

def _w(key: str, lang: str, **kw: Any) -> str:
    ru, en = _WORDS[key]
    text = en if lang == "en" else ru
    return text.format(**kw) if kw else text


def _status_text(status: str, lang: str) -> str:
    ru, en = STATUS_LABELS.get(status, (status, status))
    return f"{STATUS_ICONS.get(status, '')} {en if lang == 'en' else ru}"


def _title(data: dict[str, Any], lang: str = "en") -> str:
    r = data["run"]
    return f"{_w('title', lang)} #{r['id']}: {tier_title(str(r['tier']), lang)}"


def _value(key: str, v: Any, lang: str) -> str:
    return format_value(key, v, lang)


def _ci(row: dict[str, Any], lang: str) -> str:
    lo, hi = row.get("ci_low"), row.get("ci_high")
    if lo is None or hi is None or (isinstance(lo, float) and pd.isna(lo)) or (isinstance(hi, float) and pd.isna(hi)):
        return "—"
    return f"[{_value(row['metric'], lo, lang)}; {_value(row['metric'], hi, lang)}]"


def _duration(r: dict[str, Any], lang: str) -> str:
    try:
        start, end = pd.Timestamp(r.get("started_at")), pd.Timestamp(r.get("finished_at"))
    except (TypeError, ValueError):
        return "—"
    if pd.isna(start) or pd.isna(end):
        return "—"
    return format_seconds((end - start).total_seconds(), lang)


def _metric_rows(data: dict[str, Any], lang: str, *, offline: bool) -> list[dict[str, Any]]:
    rows = []
    for m in data["metrics"]:
        key = str(m.get("metric"))
        spec = catalog.get(key)
        value = m.get("value")
        status = None if offline else m.get("status")
        rows.append({
            "key": key, "label": catalog.label(key, lang), "value": _value(key, value, lang), "ci": _ci(m, lang),
            "n": "—" if m.get("n") is None else str(int(m["n"])),
            "n_failed": "—" if m.get("n_failed") is None else str(int(m["n_failed"])),
            "baseline": "—" if m.get("baseline") is None else _value(key, m["baseline"], lang),
            "status": _status_text(status, lang) if status else "—",
            "scale": spec.scale.label(lang) if spec else "—",
            "direction": _w(spec.direction if spec else "none", lang),
            "reading": (spec.band(value, lang) if spec is not None and isinstance(value, int | float) else None) or "—",
            "has_baseline": m.get("baseline") is not None,
        })
    return rows


def _key_metric_keys(data: dict[str, Any]) -> list[str]:
    tier = data["run"]["tier"]
    return list(SPECS[tier].key_metrics) if tier in SPECS else []


def document(data: dict[str, Any], *, lang: str = "en") -> tuple[str, list[tuple[str, list[tuple[Any, ...]]]]]:
    """``(title, sections)`` of the report in ``lang``: a readable summary first (verdict, what, configuration,
    dataset, when, items, key metrics), then every metric, the failures, the items, the technical details."""
    r = data["run"]
    status = data["baseline_status"]
    offline = bool(r.get("offline"))
    rows = _metric_rows(data, lang, offline=offline)
    warn: list[tuple[Any, ...]] = []
    if offline:
        warn.append(("warn", _w("offline", lang)))
    if r.get("mixed"):
        warn.append(("warn", _w("mixed", lang)))
    if r.get("error"):
        warn.append(("warn", f"{_w('error', lang)}:", r["error"]))  # data: provider and bot error bodies
    warn += [("warn", f"ℹ️ {line}") for line in notes(data, lang=lang)]  # how a run with outcomes was scored
    poor = data.get("judge_agreement") or {}
    warn += [("warn", _judge_warning_line(k, w, lang)) for k, w in poor.items()]
    for x in rows:
        if x["key"] in poor:
            x["label"] += " ⚠️"
    total = r.get("n_items_total") if r.get("n_items_total") is not None else len(data["items"])
    state = r.get("state") or r.get("status")
    summary = [
        (_w("verdict", lang), _status_text(status["status"], lang)),
        *_gate_line(status, lang),
        (_w("what", lang), tier_title(str(r["tier"]), lang)),
        (_w("config", lang), ("data", config_words(r, lang))),
        (_w("dataset", lang), ("data", r.get("dataset_name") or "—")),
        (_w("when", lang), when(r.get("started_at"))),
        (_w("duration", lang), _duration(r, lang)),
        (_w("state", lang), (lambda p: p[1] if lang == "en" else p[0])(STATE_LABELS.get(str(state), (str(state), str(state))))),
        (_w("items", lang), _w("items_line", lang, done=r.get("n_items_done", 0), failed=r.get("n_items_failed", 0),
                               total=total)),
    ]
    wanted = _key_metric_keys(data)
    key_rows = [x for x in rows if x["has_baseline"]] or [x for x in rows if x["key"] in wanted
                                                          or x["key"].split(".")[-1] in wanted]
    key_rows = key_rows[:12]
    short_head = [_w("h_metric", lang), _w("h_value", lang), _w("h_ci", lang), _w("h_baseline", lang),
                  _w("h_status", lang)]
    sections: list[tuple[str, list[tuple[Any, ...]]]] = [
        (_w("summary", lang), [*warn, ("dl", summary)]
         + ([("table", short_head, [[x["label"], x["value"], x["ci"], x["baseline"], x["status"]] for x in key_rows], None)]
            if key_rows else [])
         + [("p", (status["rule_en"] if lang == "en" else status["rule_ru"]).replace("**", ""))]),
    ]
    full_head = [_w("h_metric", lang), _w("h_key", lang), _w("h_value", lang), _w("h_ci", lang), _w("h_n", lang),
                 _w("h_failed", lang), _w("h_baseline", lang), _w("h_scale", lang), _w("h_better", lang),
                 _w("h_status", lang), _w("h_reading", lang)]
    sections.append((_w("all_metrics", lang), [
        ("table", full_head, [[x["label"], ("code", x["key"]), x["value"], x["ci"], x["n"], x["n_failed"], x["baseline"],
                               x["scale"], x["direction"], x["status"], x["reading"]] for x in rows], None),
        ("figures",),
    ]))
    failures = data["failures"]
    sections.append((f"{_w('failures', lang)} ({len(failures)})", [
        ("table", [_w("h_item", lang), _w("h_error", lang)],
         [[("data", f.get("item_key")), ("data", f.get("error"))] for f in failures], None),
    ]))
    items = data["items"]
    cols = _item_cols(items)
    sections.append((f"{_w('item_rows', lang)} ({len(items)})", [
        ("table", [column_header(c, lang) for c in cols], [[_item_cell(c, it.get(c), lang) for c in cols] for it in items],
         "items"),
    ]))
    tech = [(_w("t_id", lang), f"#{r['id']}"), (_w("t_label", lang), ("data", r.get("label") or "—")),
            (_w("t_hash", lang), ("code", r.get("dataset_hash") or "—")),
            (_w("t_models", lang), ("data", ", ".join(models_words(r, lang)) or "—")),
            (_w("t_prompts", lang), ("code", "; ".join(f"{k}: {str(v)[:12]}" for k, v in (r.get("prompts") or {}).items()) or "—")),
            (_w("t_code", lang), ("code", r.get("code_version") or "—")),
            (_w("t_by", lang), ("data", r.get("created_by") or "—")),
            (_w("t_started", lang), str(r.get("started_at") or "—")), (_w("t_finished", lang), str(r.get("finished_at") or "—"))]
    tech += [(f"{_w('t_params', lang)}: {k}", v if isinstance(v, tuple) else ("data", v)) for k, v in param_rows(r.get("params"), lang)]
    sections.append((_w("tech", lang), [("dl", tech)]))
    return _title(data, lang), sections


def _gate_line(status: dict[str, Any], lang: str) -> list[tuple[str, str]]:
    """The deployment gate as a line of the verdict (the same row ``baselines.evaluate_run`` judged)."""
    gate = next((m for m in status.get("metrics") or [] if m.get("gate")), None)
    if gate is None:
        return []
    passed = gate["value"] is not None and gate["baseline"] is not None and gate["value"] >= gate["baseline"]
    share, thr = _value("gate_pass_rate", gate["value"], lang), _value("gate_pass_rate", gate["baseline"], lang)
    label = gate["label_en"] if lang == "en" else gate["label_ru"]
    return [(label, f"{'PASS' if passed else 'FAIL'} — {share} {'≥' if passed else '<'} {thr}")]


def _item_cell(column: str, value: Any, lang: str) -> Any:
    """A per-item cell: a stored value in words (``not_found`` -> "«не найдено»"), a number as the catalog writes
    it, anything else as data."""
    if isinstance(value, bool):
        return ("да", "yes")[lang == "en"] if value else ("нет", "no")[lang == "en"]
    if isinstance(value, float):
        spec = catalog.get(column) or catalog.for_item_field(column)
        return format_value(spec.key if spec is not None else None, value, lang)
    if value is None:
        return "—"
    if isinstance(value, dict | list | tuple):  # nested results read as text, never as a JSON dump
        return ("data", _nested_text(value, lang))
    return ("data", value_word(column, value, lang))


def _nested_text(value: Any, lang: str) -> str:
    """A nested per-item value in words: ``Header: value; …`` for a mapping (headers of the stored fields),
    records separated by ``|``."""
    if isinstance(value, dict):
        parts = []
        for k, v in value.items():
            cell = _item_cell(str(k), v, lang)
            shown = cell[1] if isinstance(cell, tuple) else cell
            parts.append(f"{column_header(str(k), lang)}: {shown}")
        return "; ".join(parts)
    if isinstance(value, list | tuple):
        return " | ".join(_nested_text(v, lang) if isinstance(v, dict | list | tuple) else str(
            _item_cell("", v, lang)[1] if isinstance(_item_cell("", v, lang), tuple) else _item_cell("", v, lang))
            for v in value)
    return str(value)


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
    if m.get("n_context_cut"):
        k = int(m["n_context_cut"])
        out.append(
            f"Context cut to fit the judge model's context window for {k} answered items (whole chunks first, the "
            "last one cut at a word)."
            if lang == "en" else
            f"Контекст обрезан до окна контекста модели-судьи для {k} ответов (сначала целые чанки, последний — "
            "по границе слова)."
        )
    return out + jury_notes(m, lang=lang)


def jury_notes(metrics: dict[str, Any], *, lang: str = "en") -> list[str]:
    """A sentence for each judge model that failed most of its calls (``judge_calls.failing_models``, also of the
    benchmark judge) and for undecided ties between judges (``n_undecided``); plain text from counts only."""
    out: list[str] = []
    for block in ("judge_calls", "benchmark_judge_calls"):
        calls = metrics.get(block) or {}
        for model in calls.get("failing_models") or []:
            b = (calls.get("per_model") or {}).get(model) or {}
            kinds = ", ".join(f"{k} {n}" for k, n in (b.get("failure_kinds") or {}).items() if n)
            n, f = int(b.get("n_calls") or 0), int(b.get("n_failed_calls") or 0)
            out.append(
                f"Judge model {model} failed {f} of {n} calls ({kinds}): the jury's scores rest on the other models."
                if lang == "en" else
                f"Модель-судья {model} не дала оценки в {f} из {n} вызовов ({kinds}): оценки жюри держатся на "
                "остальных моделях.")
    if metrics.get("n_undecided"):
        k = int(metrics["n_undecided"])
        out.append(
            f"{k} items are undecided (a tie between the judges): they are counted apart and left out of the "
            "accuracy-type metrics."
            if lang == "en" else
            f"{k} элементов без решения (ничья между судьями): они посчитаны отдельно и не входят в метрики точности.")
    return out


# ------------------------------------------------------------------------------------------ Markdown

def _md_text(v: Any) -> str:
    """A cell or value: ("code", x) as a code span, ("data", x) through :func:`voproshalych_eval.markdown.cell`
    (plain when inert, else a code span: data never renders HTML, images or links), text of ours plain."""
    if isinstance(v, tuple) and v and v[0] in ("code", "data"):
        if v[0] == "code":
            return md.literal(v[1]).replace("|", "\\|") or "—"
        return md.cell(v[1])
    return " ".join(str(v).split()).replace("|", "\\|")


def _md_rows(headers: list[str], rows: list[list[Any]]) -> str:
    if not rows:
        return "_—_\n"
    # a header may come from the data (an item field's own name, when the catalog does not know it): escaped
    out = ["| " + " | ".join(md.cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(_md_text(c) for c in row) + " |" for row in rows]
    return "\n".join(out) + "\n"


def to_markdown(data: dict[str, Any], *, lang: str = "en") -> str:
    """The report as Markdown in ``lang`` (the per-item table is cut to the first 200 rows, noted).

    Every data field (questions, answers, labels, errors...) goes through :mod:`voproshalych_eval.markdown`:
    HTML, images and links from the data are shown as text, never rendered."""
    title, sections = document(data, lang=lang)
    parts = [f"# {title}\n"]
    for head, blocks in sections:
        parts.append(f"## {head}\n")
        for b in blocks:
            if b[0] == "p":
                parts.append(b[1] + "\n")
            elif b[0] == "warn":
                parts.append(f"> {b[1]}" + (f" {md.literal(b[2])}" if len(b) > 2 else "") + "\n")
            elif b[0] == "dl":
                parts.append("\n".join(f"- **{t}:** {_md_text(v)}" for t, v in b[1]) + "\n")
            elif b[0] == "table":
                rows = b[2]
                if b[3] == "items" and len(rows) > _MAX_ITEMS_MD:
                    parts.append(f"_{_w('first_rows', lang, n=_MAX_ITEMS_MD, total=len(rows))}_\n")
                    rows = rows[:_MAX_ITEMS_MD]
                parts.append(_md_rows(b[1], rows))
    return "\n".join(parts)


# ------------------------------------------------------------------------------------------ HTML

def _html_text(v: Any) -> str:
    if isinstance(v, tuple) and v and v[0] in ("code", "data"):
        return f"<code>{html.escape(_fmt(v[1]))}</code>" if v[0] == "code" else html.escape(_fmt(v[1]))
    return html.escape(str(v))


def _html_rows(headers: list[str], rows: list[list[Any]], *, max_rows: int | None, lang: str) -> str:
    if not rows:
        return "<p><em>—</em></p>"
    shown = rows if max_rows is None else rows[:max_rows]
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_html_text(c)}</td>" for c in row) + "</tr>" for row in shown)
    note = "" if len(shown) == len(rows) else f"<p><em>{html.escape(_w('first_rows', lang, n=len(shown), total=len(rows)))}</em></p>"
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{note}"


def figures(data: dict[str, Any], *, lang: str = "en") -> list[Any]:
    """The report's plots: aggregates with CIs against baselines; the distribution of the first per-item metric."""
    from voproshalych_eval.plots.layout import metric_text, polish  # heavy: defers plotly (via plots.layout)
    from voproshalych_eval.plots.runs import metrics_figure  # heavy: defers plotly (via plots.runs)

    figs = []
    metrics = pd.DataFrame(data["metrics"])
    if data["run"].get("offline") and "status" in metrics:
        metrics["status"] = None  # offline numbers are never coloured by a baseline verdict
    if len(metrics) and metrics["value"].notna().any():
        title = ("Метрики и 95% ДИ (◇ базовый уровень)", "Aggregates with 95% CI (◇ baseline)")[lang == "en"]
        figs.append(metrics_figure(metrics, title=title, lang=lang))
    items = pd.DataFrame(data["items"])
    if len(items):
        fields = numeric_item_fields(items.set_index("item_key") if "item_key" in items else items)
        if fields:
            import plotly.graph_objects as go  # heavy: defers plotly

            f = fields[0]
            fig = go.Figure(go.Histogram(x=pd.to_numeric(items[f], errors="coerce").dropna(), nbinsx=30))
            head = ("Распределение по элементам", "Per-item distribution")[lang == "en"]
            fig.update_layout(title=f"{head}: {metric_text(f, lang, item_field=True)}", height=300,
                              yaxis_title=("элементов", "items")[lang == "en"], margin={"l": 40, "r": 20, "b": 40})
            figs.append(polish(fig, legend=False))
    return figs


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem auto;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:.5rem 0 1.5rem;font-size:.85rem}
th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;vertical-align:top;max-width:420px;overflow-wrap:anywhere}
th{background:#f3f3f3}.warn{background:#fff4d6;padding:.5rem;border-radius:4px}
dl{display:grid;grid-template-columns:max-content auto;gap:.2rem 1rem}dt{font-weight:600}dd{margin:0}
"""


def to_html(data: dict[str, Any], *, lang: str = "en") -> str:
    """A self-contained HTML page in ``lang``: plotly.js inlined once, no external script, stylesheet or font."""
    title, sections = document(data, lang=lang)
    figs = figures(data, lang=lang)
    plots = "".join(
        fig.to_html(full_html=False, include_plotlyjs=(i == 0), config={"displaylogo": False})
        for i, fig in enumerate(figs)
    )
    body = [f"<h1>{html.escape(title)}</h1>"]
    for head, blocks in sections:
        body.append(f"<h2>{html.escape(head)}</h2>")
        for b in blocks:
            if b[0] == "p":
                body.append(f"<p>{html.escape(b[1])}</p>")
            elif b[0] == "warn":
                body.append(f'<p class="warn">{html.escape(" ".join(map(str, b[1:])))}</p>')
            elif b[0] == "dl":
                body.append("<dl>" + "".join(f"<dt>{html.escape(t)}</dt><dd>{_html_text(v)}</dd>" for t, v in b[1]) + "</dl>")
            elif b[0] == "table":
                body.append(_html_rows(b[1], b[2], max_rows=_MAX_ITEMS_HTML if b[3] == "items" else None, lang=lang))
            elif b[0] == "figures":
                body.append(plots)
    return (
        "<!DOCTYPE html>\n<html lang=\"" + ("en" if lang == "en" else "ru") + "\"><head><meta charset=\"utf-8\">"
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>"
        + "\n".join(body)
        + "</body></html>\n"
    )


def to_json(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, indent=1)


def to_csv(data: dict[str, Any], *, part: str = "items") -> str:
    """One table as CSV: ``items`` (per-item results, nested fields dotted) or ``metrics`` (aggregates
    with CIs, baselines and statuses). Every row carries ``run_id`` so tables of several runs can be
    concatenated. Formula cells (text starting with ``=``, ``+``, ``-``, ``@``, tab, CR) are written with a
    leading ``'`` (:func:`datasets.files.dataframe_csv`) so a spreadsheet never evaluates them."""
    if part not in CSV_PARTS:
        raise ValueError(f"Unknown CSV part {part!r}: use {' or '.join(CSV_PARTS)}.")
    rows = data["items"] if part == "items" else data["metrics"]
    df = pd.DataFrame(rows)
    df.insert(0, "run_id", data["run"]["id"])
    for col in df.columns:
        if df[col].map(lambda v: isinstance(v, dict | list)).any():
            df[col] = df[col].map(lambda v: json.dumps(v, ensure_ascii=False) if isinstance(v, dict | list) else v)
    return dataframe_csv(df)


def render(data: dict[str, Any], fmt: str, *, lang: str = "en", part: str = "items") -> str:
    """The report of ``data`` (from ``runs.export_data``) in ``fmt``: json, md, html or csv.

    Every string of ``data`` is redacted first (configured keys, credentials in URLs, auth headers)."""
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


def run_report(engine: Engine, run_id: int, fmt: str, *, lang: str = "en", part: str = "items",
               mask_personal_data: bool = False) -> str:
    """Export one run in ``fmt`` (json, md, html, csv); ``mask_personal_data``: e-mail addresses, phone numbers
    and full names in it replaced by placeholders (:func:`voproshalych_eval.masking.mask_personal_data`)."""
    text = render(with_judge_agreement(engine, export_data(engine, run_id)), fmt, lang=lang, part=part)
    return mask(text) if mask_personal_data else text


def with_judge_agreement(engine: Engine, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with ``judge_agreement``: the metrics whose judge agrees poorly with people (latest stored
    measurement of that judge metric, model and prompt version; :func:`voproshalych_eval.judges.agreement.judge_warnings`)."""
    run = get_run(engine, int(data["run"]["id"]))
    keys = [str(m.get("metric")) for m in data.get("metrics") or []]
    warn = judge_warnings(engine, keys, run.models if run else None, data["run"].get("prompts")) if keys else {}
    return {**data, "judge_agreement": jsonable(warn)}


def _judge_warning_line(key: str, w: dict[str, Any], lang: str) -> str:
    ci = w.get("ci") or [None, None]
    v = "—" if w.get("value") is None else f"{w['value']:.2f}"
    span = "" if ci[0] is None else f" [{ci[0]:.2f}; {ci[1]:.2f}]"
    if lang == "en":
        return (f"⚠️ {key}: its judge agrees poorly with people — {w['statistic']} {v}{span}, n = {w['n']} "
                f"({', '.join(w.get('models') or [])}, {w['version']})")
    return (f"⚠️ {key}: судья плохо согласуется с людьми — {w['statistic']} {v}{span}, n = {w['n']} "
            f"({', '.join(w.get('models') or [])}, {w['version']})")

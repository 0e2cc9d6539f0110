"""What a page shows in words, and whether it is all in one language with no raw metric keys.

:func:`page_texts` walks an AppTest element tree and collects every text we control: titles, headers,
markdown and captions (code spans, code blocks and LaTeX removed — those are code), alerts, metric cards,
widget labels, options, help texts and placeholders, tab/expander/status labels, progress texts, table
column headers (the ``column_config`` label when there is one), download and link labels, and the words of
plotly figures (titles, axis titles, tick texts, legend and trace names, annotations, hover templates).
Table cells and figure data are data, not UI text, and are not collected; ``st.json`` is reported as a
violation of its own (no raw JSON in the UI).

:func:`violations` then checks the texts of one language:

* no metric key (``hit_rate@1``, ``chunk_coverage``, ``avg_faithfulness``…) outside code — in either language;
* Russian UI: no English words, except technical terms (:data:`LATIN_TERMS`), acronyms, identifiers
  (``demo_golden``, ``e5-small``, URLs, file names) and words that are part of the data;
* English UI: no Cyrillic text, except text that is part of the data (questions, chunks, answers, names…).

"Part of the data" means the span occurs in :func:`data_corpus` — every string the demo source and the
store hold (chunks, the question log, datasets, run parameters and per-item results).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

from voproshalych_eval.metrics import catalog

#: Latin words a Russian UI may show as they are (names of metrics, methods, formats, products)
LATIN_TERMS = {
    "hit", "rate", "recall", "precision", "mrr", "ndcg", "map", "rouge", "bleu", "chrf", "f1", "e2e", "kappa",
    "cohen", "fleiss", "trustworthiness", "umap", "kmeans", "hnsw", "pgvector", "postgresql", "llm", "api", "json",
    "jsonl", "csv", "html", "md", "markdown", "pass", "fail", "url", "fts", "rrf", "top", "k", "n", "p", "s", "ci",
    "id", "yes", "no", "openai", "streamlit", "aspectcritic", "rubricsscore", "simplecriteriascore", "tf", "idf",
    "c-tf-idf", "d", "z", "bm25", "lasso", "sentence-transformers", "llama", "cpp", "gpu", "cpu", "sql", "tier",
    "ok", "ragas", "nli", "x", "y", "b", "a", "r", "f", "l", "m", "e", "g", "i", "j", "q", "t", "u", "v",
    "w", "c", "h", "o", "ms", "min", "max", "std", "eps", "ε", "exp", "log", "sentence-bleu", "sacrebleu", "post",
    "get", "http", "https",
}

_KEY_RE = re.compile(r"(?<![\w.@/-])([A-Za-z][A-Za-z0-9]*(?:[_@][A-Za-z0-9]+)+)(?![\w@/-])")
_LATIN_SPAN = re.compile(r"[A-Za-z][A-Za-z'’\-]*(?:[ \u00a0]+[A-Za-z][A-Za-z'’\-]*)*")
_CYR_SPAN = re.compile(r"[А-Яа-яЁё][А-Яа-яЁё0-9\-«»\"' ,.:;!?()\u00a0/]*")
_CODE_SPAN = re.compile(r"`[^`]*`")
_FENCE = re.compile(r"```.*?```", re.S)
_MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.S)
_HTML = re.compile(r"<[^>]+>")
_PLACEHOLDER = re.compile(r"%\{[^}]*\}")
#: tokens that look like identifiers, URLs, files, model names: code/data, not words
_IDENTIFIER = re.compile(r"\S*(?:[_/\\:.=#@]|\d)\S*")
#: identifiers, URLs, hashes and file names (a number inside them is not a written value)
_IDENTIFIER_NO_DIGITS = re.compile(r"\S*(?:[_/\\=#@]|[A-Za-z]\d|\d[A-Za-z])\S*")
#: per-item fields and other raw keys that have no catalog entry but must not be shown either
RAW_KEYS = {"top10pct_chunk_share", "best_silhouette", "chunk_coverage", "page_coverage", "n_never_retrieved",
            "mean_top1_similarity", "first_relevant_rank", "rougeL_f", "rouge1_f", "rouge2_f", "e2e_score",
            "rag_score", "semantic_similarity", "answer_correctness", "answer_relevance", "gate_pass_rate"}


def _raw_values() -> set[str]:
    """Values of the code's own enumerations (review statuses, question types, answer classes, bot outcomes,
    run states, failure kinds, stored item fields): shown as they are they are raw, even though the store holds
    them (so "part of the data" does not excuse them)."""
    from voproshalych_eval.analytics.answers import ANSWER_CLASSES
    from voproshalych_eval.bot_api.spec import OUTCOMES
    from voproshalych_eval.datasets import annotations
    from voproshalych_eval.generation.sampling import QUESTION_TYPES

    return {*annotations.REVIEW_STATUSES, *annotations.CHECKS, *QUESTION_TYPES, *ANSWER_CLASSES, *OUTCOMES,
            "done_with_failures", "cancelled", "interrupted", "running", "ground_truth_answer", "chunk_text",
            "confluence_url", "relevant_chunk_ids", "cost_usd", "llm_label", "item_index", "labelled", "skipped",
            "transport", "parse", "not_applicable", "empty_answer", "timeout", "rate_limit"}


#: enumeration values and stored field names that must never be shown raw (see :func:`_raw_values`)
RAW_VALUES = _raw_values()
#: a value that stands for "nothing" written the way Python or pandas prints it
_NOTHING = re.compile(r"(?<![\w-])(None|nan|NaN|NaT|null)(?![\w-])")
#: more decimals than the catalog ever writes (three: shares; two: 1–5 scores; one: 0–100)
_LONG_DECIMALS = re.compile(r"(?<![\w.,])-?\d+[.,]\d{4,}(?![\w.,])")
#: the seed documents are a project-internal word: texts name the methodology document or the metric's source
_SEED = re.compile(r"(?i)(?<![\w-])(seed\w*|сид(а|у|ом|е|ы|ов|ам|ами|ах)?)(?![\w-])")


# ------------------------------------------------------------------------------------------ collection

def strip_code(text: str) -> str:
    """Markdown without code blocks, code spans, LaTeX and HTML tags (those are code, not UI words)."""
    text = _FENCE.sub(" ", text)
    text = _CODE_SPAN.sub(" ", text)
    text = _MATH.sub(" ", text)
    return _HTML.sub(" ", text)


def _figure_texts(spec: dict[str, Any]) -> Iterator[str]:
    layout = spec.get("layout") or {}

    def title(obj: Any) -> str | None:
        if isinstance(obj, dict):
            t = obj.get("title")
            if isinstance(t, dict):
                return t.get("text")
            return t if isinstance(t, str) else None
        return None

    if (t := title(layout)) is not None:
        yield t
    for name, value in layout.items():
        if re.fullmatch(r"[xy]axis\d*|legend\d*|coloraxis\d*", name) and isinstance(value, dict):
            if (t := title(value)) is not None:
                yield t
            for tick in value.get("ticktext") or []:
                yield str(tick)
    for ann in layout.get("annotations") or []:
        if isinstance(ann, dict) and ann.get("text"):
            yield str(ann["text"])
    for trace in spec.get("data") or []:
        if trace.get("name") and trace.get("showlegend", True) is not False:
            yield str(trace["name"])
        if trace.get("hovertemplate"):
            for t in trace["hovertemplate"] if isinstance(trace["hovertemplate"], list) else [trace["hovertemplate"]]:
                yield _PLACEHOLDER.sub(" ", str(t))
        colorbar = (trace.get("marker") or {}).get("colorbar") if isinstance(trace.get("marker"), dict) else None
        if (t := title(colorbar)) is not None:
            yield t


def _dataframe_headers(proto: Any) -> Iterator[str]:
    import pyarrow as pa

    config = json.loads(proto.columns) if getattr(proto, "columns", "") else {}
    names: list[str] = []
    try:
        table = pa.ipc.open_stream(proto.arrow_data.data).read_all()
        names = [n for n in table.schema.names if not n.startswith("__index_level_")]
    except Exception:  # noqa: BLE001 - an unreadable table has no headers to check
        names = []
    for name in names:
        cfg = config.get(name) or config.get(f"_pos:{names.index(name)}") or {}
        if cfg.get("hidden"):
            continue
        yield str(cfg.get("label") or name)
        if cfg.get("help"):
            yield str(cfg["help"])


def _dataframe_cells(proto: Any, limit: int = 200) -> Iterator[tuple[str, str]]:
    """``("table cell", text)`` of the text cells and ``("table number", repr)`` of unformatted float cells
    with more decimals than the catalog allows (the first ``limit`` rows of each shown column)."""
    import pyarrow as pa

    config = json.loads(proto.columns) if getattr(proto, "columns", "") else {}
    try:
        table = pa.ipc.open_stream(proto.arrow_data.data).read_all()
    except Exception:  # noqa: BLE001 - an unreadable table has no cells to check
        return
    names = [n for n in table.schema.names if not n.startswith("__index_level_")]
    for pos, name in enumerate(names):
        cfg = config.get(name) or config.get(f"_pos:{pos}") or {}
        if cfg.get("hidden"):
            continue
        column = table.column(name)
        values = column.slice(0, limit).to_pylist()
        if pa.types.is_floating(column.type):
            if (cfg.get("type_config") or {}).get("format"):
                continue
            for v in values:
                if isinstance(v, float) and v == v and abs(v - round(v, 3)) > 1e-12:
                    yield "table number", f"{cfg.get('label') or name}: {v!r}"
                    break
        elif pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            for v in values:
                if isinstance(v, str) and v.strip():
                    yield "table cell", v


def page_texts(at: Any) -> list[tuple[str, str]]:
    """``(element kind, text)`` of every UI text of the rendered page (see the module doc)."""
    out: list[tuple[str, str]] = []

    def add(kind: str, text: Any, *, markdown: bool = False) -> None:
        if text is None:
            return
        s = str(text)
        if markdown:
            s = strip_code(s)
        if s.strip():
            out.append((kind, s))

    def walk(node: Any) -> None:
        proto = getattr(node, "proto", None)
        kind = getattr(node, "type", type(node).__name__)
        if proto is not None:
            if kind == "code":
                pass
            elif kind == "json":
                out.append(("json", "<st.json>"))
            elif kind == "dataframe" or kind == "arrow_data_frame":
                for h in _dataframe_headers(proto):
                    add("table header", h)
                for cell_kind, cell in _dataframe_cells(proto):
                    add(cell_kind, cell)
            elif kind == "plotly_chart":
                try:
                    spec = json.loads(proto.spec)
                except (ValueError, AttributeError):
                    spec = {}
                for t in _figure_texts(spec):
                    add("chart", t, markdown=True)
            else:
                fields = {f.name: v for f, v in proto.ListFields()}
                for name in ("label", "body", "help", "placeholder", "text", "caption"):
                    if isinstance(fields.get(name), str):
                        add(f"{kind}.{name}", fields[name], markdown=True)
                for opt in fields.get("options", []) or []:
                    add(f"{kind}.option", opt if isinstance(opt, str) else getattr(opt, "content", None), markdown=True)
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return out


# ------------------------------------------------------------------------------------------ the data

def data_corpus(*engines: Any, extra: Iterable[str] = ()) -> str:
    """Every string held in the text and JSON columns of the given databases (lower case, one per line)."""
    from sqlalchemy import text

    parts: list[str] = [s.lower() for s in extra]
    q = text(
        "SELECT table_schema, table_name, column_name, data_type FROM information_schema.columns "
        "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') "
        "AND data_type IN ('text', 'character varying', 'json', 'jsonb', 'ARRAY')"
    )

    def strings(obj: Any) -> Iterator[str]:
        if isinstance(obj, str):
            yield obj
        elif isinstance(obj, dict):
            for k, v in obj.items():
                if isinstance(k, str) and not k.isascii():
                    yield k
                yield from strings(v)
        elif isinstance(obj, list | tuple):
            for v in obj:
                yield from strings(v)

    for eng in engines:
        with eng.connect() as conn:
            cols = conn.execute(q).all()
            for schema, table, column, dtype in cols:
                rows = conn.execute(text(f'SELECT "{column}" FROM "{schema}"."{table}" WHERE "{column}" IS NOT NULL'))
                for (value,) in rows:
                    if dtype in ("json", "jsonb") and isinstance(value, str):
                        with contextlib.suppress(ValueError):
                            value = json.loads(value)
                    parts.extend(s.lower() for s in strings(value))
    return "\n".join(parts)


# ------------------------------------------------------------------------------------------ checks

#: texts that are labels, never code: an identifier with ``_`` in them is a raw key even when uncatalogued
STRICT_KINDS = ("table header", "metric.label", "chart", "tab.label", "expander.label", "button.label")

def _is_metric_key(token: str) -> bool:
    return token in RAW_KEYS or catalog.is_catalogued(token) or catalog.for_item_field(token) is not None


def _allowed_latin(word: str) -> bool:
    """A single letter, an acronym (``MRR``, ``UMAP``) or a technical term of :data:`LATIN_TERMS`."""
    w = word.strip("'’-")
    return len(w) <= 1 or (w.isupper() and len(w) >= 2) or w.lower() in LATIN_TERMS


def _in_data(span: str, corpus: str) -> bool:
    s = " ".join(span.replace("…", " ").split()).strip(" ,.:;!?()«»\"'-").lower()
    if not s:
        return True
    return s in corpus or s.replace("\u00a0", " ") in corpus


def violations(texts: Iterable[tuple[str, str]], lang: str, corpus: str = "") -> list[str]:
    """Problems of the texts of a page rendered in ``lang`` (empty when it is clean); see the module doc."""
    found: list[str] = []
    seen: set[tuple[str, str]] = set()

    def report(kind: str, what: str, text: str) -> None:
        if (what, text) not in seen:
            seen.add((what, text))
            found.append(f"{kind}: {what} in {text[:160]!r}")

    for kind, raw in texts:
        if kind == "json":
            report(kind, "raw JSON (st.json)", raw)
            continue
        if kind == "table number":
            report(kind, "more decimals than the catalog allows", raw)
            continue
        for m in _NOTHING.finditer(raw):
            report(kind, f"raw value {m.group(1)!r}", raw)
        for m in _LONG_DECIMALS.finditer(_IDENTIFIER_NO_DIGITS.sub(" ", raw)):
            report(kind, f"more decimals than the catalog allows ({m.group(0)})", raw)
        for m in _SEED.finditer(raw):
            if not _in_data(raw, corpus):
                report(kind, f"the word {m.group(0)!r} (name the methodology document or the metric's source)", raw)
        for m in _KEY_RE.finditer(raw):
            if m.group(1) in RAW_VALUES:
                report(kind, f"raw value {m.group(1)!r}", raw)
        if kind == "table cell":  # data: only raw values, raw keys of flattened records and (ru) enum words
            for m in re.finditer(r"(?<![\w@/-])([a-z][a-z0-9]*(?:_[a-z0-9]+)+):(?:\s|$)", raw):
                report(kind, f"raw key {m.group(1)!r}", raw)
            if lang == "ru" and raw.strip() in RAW_VALUES:
                report(kind, f"raw value {raw.strip()!r}", raw)
            continue
        strict = kind in STRICT_KINDS
        for m in _KEY_RE.finditer(raw):
            token = m.group(1)
            if (_is_metric_key(token) or (strict and "_" in token)) and not _in_data(token, corpus):
                report(kind, f"{'metric' if _is_metric_key(token) else 'raw'} key {token!r}", raw)
        if lang == "ru":
            cleaned = _IDENTIFIER.sub(" ", raw)
            for m in _LATIN_SPAN.finditer(cleaned):
                words = [w for w in re.split(r"[ \u00a0]+", m.group(0)) if w]
                foreign = [w for w in words if not _allowed_latin(w)]
                for w in foreign:
                    if w in RAW_VALUES:
                        report(kind, f"raw value {w!r}", raw)
                if foreign and not _in_data(m.group(0), corpus):
                    report(kind, f"English {' '.join(foreign)!r}", raw)
        else:
            for m in _CYR_SPAN.finditer(raw):
                span = m.group(0).strip(" ,.:;!?()\u00a0")
                if span and not _in_data(span, corpus):
                    report(kind, f"Russian {span!r}", raw)
    return found


# ------------------------------------------------------------------------------------------ reports and the CLI

def report_texts(text: str, fmt: str) -> list[tuple[str, str]]:
    """``(kind, text)`` of a Markdown or HTML report: table headers, table cells and every other text (code spans,
    ``<code>``, scripts and styles left out — those are code, hashes and the inlined plotly.js)."""
    if fmt == "html":
        from html.parser import HTMLParser

        out: list[tuple[str, str]] = []

        class _Walk(HTMLParser):
            def __init__(self) -> None:
                super().__init__()
                self.stack: list[str] = []
                self.buf: list[str] = []

            def handle_starttag(self, tag: str, attrs: Any) -> None:
                self.stack.append(tag)

            def handle_endtag(self, tag: str) -> None:
                if tag in ("th", "td", "p", "dt", "dd", "h1", "h2", "title", "li") and self.buf:
                    kind = {"th": "table header", "td": "table cell"}.get(tag, "report.text")
                    out.append((kind, "".join(self.buf).strip()))
                    self.buf = []
                while self.stack and self.stack.pop() != tag:
                    pass

            def handle_data(self, data: str) -> None:
                if not any(t in ("code", "script", "style") for t in self.stack) and data.strip():
                    self.buf.append(data)

        _Walk().feed(text)
        return [(k, t) for k, t in out if t]
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        if line.startswith("|"):
            if set(line) <= set("|-: "):
                continue
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
            header = i + 1 < len(lines) and set(lines[i + 1]) <= set("|-: ") and lines[i + 1].startswith("|")
            out += [("table header" if header else "table cell", strip_code(c)) for c in cells if strip_code(c).strip()]
        elif line.strip():
            out.append(("report.text", strip_code(line)))
    return out


def cli_texts(output: str) -> list[tuple[str, str]]:
    """``("cli", line)`` of a CLI command's output (code-like spans in backticks left out)."""
    return [("cli", strip_code(line)) for line in output.splitlines() if line.strip()]

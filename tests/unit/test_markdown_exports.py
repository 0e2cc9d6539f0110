"""Markdown exports never render HTML, images or links from data; HTML exports stay escaped.

Rendered with a permissive Markdown renderer (markdown-it, raw HTML *on*, tables on), so that what a
viewer would execute or fetch shows up as tags in the output.
"""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from markdown_it import MarkdownIt

from voproshalych_eval import markdown as md
from voproshalych_eval.analytics.report import coverage_gap_html, coverage_gap_markdown

HOSTILE = [
    "<script>alert('x')</script>",
    '<img src=x onerror="alert(1)">',
    "![tracker](http://evil.example/pixel.png)",
    "[click me](http://evil.example/phish)",
    "<http://evil.example/auto>",
    "<a href='javascript:alert(1)'>a</a>",
    "text with `backticks` and ``double`` | a pipe",
    "<iframe src=http://evil.example></iframe>",
    '<svg onload="alert(1)">',
    "**bold** _it_ # heading",
]

_RENDER = MarkdownIt("commonmark", {"html": True}).enable("table")
_LIVE = re.compile(r"<(script|img|a\s|iframe|svg)", re.IGNORECASE)


def live_tags(markdown_text: str) -> list[str]:
    return _LIVE.findall(_RENDER.render(markdown_text))


def test_the_renderer_would_render_raw_data() -> None:
    """Guard: unescaped, these strings do become live tags (so the checks below can fail)."""
    raw = "\n\n".join(HOSTILE)
    assert len(live_tags(raw)) >= 6


@pytest.mark.parametrize("value", HOSTILE)
def test_literal_and_cell_are_inert(value: str) -> None:
    assert live_tags(md.literal(value)) == []
    table = md.table([{"q": value, "n": 3}], ["q", "n"])
    html = _RENDER.render(table)
    assert live_tags(table) == [] and "<table>" in html and html.count("<td>") == 2


def test_literal_keeps_the_text() -> None:
    html = _RENDER.render(md.literal("a `b` ``c`` <x>"))
    assert "<code>a `b` ``c`` &lt;x&gt;</code>" in html
    assert md.literal("`edge`") == "`` `edge` ``"
    assert md.cell(0.5) == "0.5000" and md.cell(None) == "—" and md.cell(3) == "3"
    assert md.cell("a|b") == "`a\\|b`"


def _gap_result() -> SimpleNamespace:
    from voproshalych_eval.analytics.topic_trends import topic_trends

    gaps = pd.DataFrame([{
        "gap_rank": 1, "name": HOSTILE[0], "size": 12, "answered_share": 0.25, "effective_answered_share": 0.2,
        "nearest_distance": 0.4, "gap_score": 2.5, "examples": HOSTILE[1:5], "example_counts": [3, 1, 1, 1],
        "off_topic": False, "mixed": False, "name_coverage": 0.5,
    }])
    topics = pd.DataFrame([{"kind": "category", "name": HOSTILE[5], "size": 3, "answered_share": 0.0,
                            "effective_answered_share": 0.0}])
    never = pd.DataFrame([{"chunk_id": 7, "url": "http://evil.example/page", "text": HOSTILE[7] + HOSTILE[8]}])
    # what changed: a hostile topic name emerging in the last month and a hostile new word
    labels = [0] * 60 + [1] * 21
    months = ["2026-01"] * 30 + ["2026-02"] * 30 + ["2026-01"] + ["2026-02"] * 20
    texts = ["обычный вопрос"] * 60 + ["вопрос"] + [f"{HOSTILE[6]} номер {i}" for i in range(20)]
    trends = topic_trends(np.array(labels), months, {0: "stable", 1: HOSTILE[0]}, texts=texts)
    assert len(trends.changes[trends.changes["status"] != "stable"])  # the section is not empty
    return SimpleNamespace(
        topics=SimpleNamespace(gaps=gaps, topics=topics, trends=trends), source=HOSTILE[2],
        filters=SimpleNamespace(describe=lambda: HOSTILE[3]),
        n_used=100, embeddings=SimpleNamespace(info=lambda: {"model": HOSTILE[9], "n_stored": 1, "n_embedded": 2}),
        metrics={"answered_rate": 0.5, "effective_answered_rate": 0.45, "n_declined": 5, "n_topics": 4},
        utilization=SimpleNamespace(never_retrieved=never),
    )


def test_gap_report_markdown_is_inert() -> None:
    text = coverage_gap_markdown(_gap_result())
    assert live_tags(text) == []
    assert "<script>alert" in _RENDER.render(text).replace("&lt;", "<").replace("&gt;", ">")  # shown as text
    assert "| 1 | `" in text  # the topic name is a code span in its table cell


def test_gap_reports_are_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    """A configured key pasted into the bot by a user never reaches the report."""
    monkeypatch.setenv("SOME_SERVICE_API_KEY", "sk-pasted-0123456789")
    res = _gap_result()
    res.topics.gaps.at[0, "examples"] = ["мой ключ sk-pasted-0123456789 не работает"]
    res.topics.gaps.at[0, "example_counts"] = [2]
    for text in (coverage_gap_markdown(res), coverage_gap_html(res)):
        assert "sk-pasted-0123456789" not in text and "мой ключ *** не работает" in text


def test_gap_report_html_is_escaped() -> None:
    page = coverage_gap_html(_gap_result())
    assert not re.search(r"<(script|img|iframe|svg|a\s)", page, re.IGNORECASE)
    assert "&lt;script&gt;" in page

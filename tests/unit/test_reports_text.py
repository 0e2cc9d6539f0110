"""Run reports: in the report's language, a readable summary first, numbers by kind, data never live."""

from __future__ import annotations

import re

from markdown_it import MarkdownIt

from voproshalych_eval import reports

_RENDER = MarkdownIt("commonmark", {"html": True}).enable("table")
_LIVE = re.compile(r"<(script|img|a\s|iframe|svg)", re.IGNORECASE)
HASH = "ab" * 32


def _data(*, offline: bool = False, question: str = "Как получить справку?") -> dict:
    return {
        "run": {"id": 7, "tier": "tier1", "status": "done", "state": "done", "label": "<img src=x onerror=alert(1)>",
                "dataset_name": "demo_golden", "dataset_hash": HASH, "models": {"embedder": "e5-small"},
                "params": {"retriever": "vector", "k": 10, "use_index": False}, "code_version": "abc123",
                "started_at": "2026-05-01T12:00:00+00:00", "finished_at": "2026-05-01T12:01:05+00:00",
                "offline": offline, "prompts": {}, "created_by": "analyst", "n_items_total": 3, "n_items_done": 2,
                "n_items_failed": 1, "error": None},
        "metrics": [
            {"metric": "chunk.mrr", "value": 0.5805051922798157, "n": 224, "n_failed": 1, "ci_low": 0.5, "ci_high": 0.66,
             "baseline": 0.6, "scale": "0–1", "direction": "higher", "status": "attention"},
            {"metric": "n_unanswerable", "value": 224.0, "n": None, "n_failed": None, "ci_low": None, "ci_high": None,
             "baseline": None, "scale": "count", "direction": "none", "status": None},
        ],
        "baseline_status": {"status": "offline" if offline else "attention", "metrics": [], "reason": None,
                            "rule_ru": "**Правило статуса.** …", "rule_en": "**Status rule.** …"},
        "failures": [{"item_key": "q3", "error": "<script>alert(1)</script>"}],
        "items": [{"item_key": "q1", "status": "done", "question": question}],
    }


def test_russian_report_opens_with_a_readable_summary() -> None:
    text = reports.to_markdown(_data(), lang="ru")
    assert text.startswith("# Отчёт о запуске #7: Tier 1 · Поиск")
    summary = text.split("## Технические подробности")[0]
    assert "Вердикт относительно базовых уровней:** 🟡 внимание" in summary
    assert "векторный поиск · e5-small · k = 10" in summary
    assert "MRR · чанки | 0.581 | [0.500; 0.660] | 0.600 | 🟡 внимание" in summary  # a share: three decimals
    assert "| 224 |" in text and "224.000" not in text  # a count as an integer
    assert HASH not in summary and HASH in text  # hashes only in the technical details
    assert "1 мин 05 с" in summary  # the duration with units
    for english in ("Summary", "Metadata", "Aggregates", "Failures", "Items", "Baseline status"):
        assert f"## {english}" not in text


def test_english_report_is_english() -> None:
    text = reports.to_markdown(_data(), lang="en")
    assert text.startswith("# Run report #7: Tier 1 · Retrieval") and "## Summary" in text
    assert not re.search(r"[А-Яа-яЁё]", text.replace("Как получить справку?", ""))


def test_offline_report_is_never_judged() -> None:
    for fmt in ("md", "html"):
        text = reports.render(_data(offline=True), fmt, lang="ru")
        assert "📴 офлайн — не сравнивается" in text
        assert "внимание" not in text  # no baseline status on any metric row


def test_data_is_never_live() -> None:
    hostile = "<script>alert('x')</script> ![t](http://evil.example/p.png)"
    text = reports.to_markdown(_data(question=hostile), lang="ru")
    assert _LIVE.findall(_RENDER.render(text)) == []
    page = reports.to_html(_data(question=hostile), lang="ru")
    assert "&lt;script&gt;" in page and "<script>alert" not in page

"""`runs export` of a run whose items hold hostile questions/answers: Markdown inert, HTML escaped."""

from __future__ import annotations

import re

from markdown_it import MarkdownIt

from voproshalych_eval.engine import runs

HOSTILE_Q = "<script>alert('q')</script> ![x](http://evil.example/p.png)"
HOSTILE_A = '<img src=x onerror="alert(1)"> [phish](http://evil.example/login) <iframe src=//evil.example>'
_LIVE = re.compile(r"<(script|img|a\s|iframe)", re.IGNORECASE)


def test_runs_export_md_and_html_with_hostile_items(engine, capsys) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.cli import main

    run = runs.create_run(engine, "tier2", params={"note": "escaping"}, n_items_total=2, label="<b onmouseover=x>lbl</b>")
    runs.record_item(engine, run.id, "q1", {"question": HOSTILE_Q, "answer": HOSTILE_A, "faithfulness": 0.5})
    runs.record_item(engine, run.id, "q2", {}, status="failed", error=HOSTILE_A)
    runs.finish_run(engine, run.id, {"avg_faithfulness": 0.5})

    assert main(["runs", "export", str(run.id), "--format", "md"]) == 0
    text = capsys.readouterr().out
    rendered = MarkdownIt("commonmark", {"html": True}).enable("table").render(text)
    assert _LIVE.findall(rendered) == [] and "<b " not in rendered
    assert "&lt;script&gt;alert" in rendered  # the data is still there, as text
    assert "evil.example/login" in rendered

    assert main(["runs", "export", str(run.id), "--format", "html"]) == 0
    page = capsys.readouterr().out
    body = page.split("<body>", 1)[1]
    tables = "".join(re.findall(r"<table>.*?</table>", body, re.DOTALL))
    assert tables and _LIVE.findall(tables) == [] and "&lt;script&gt;" in tables


HOSTILE_ERROR = ('<img src=x onerror="alert(1)"> <script>alert(2)</script> ![pixel](http://evil.example/t.png) '
                 "[login](http://evil.example/login)")


def _assert_inert_markdown(text: str) -> None:
    rendered = MarkdownIt("commonmark", {"html": True}).enable("table").render(text)
    assert _LIVE.findall(rendered) == [] and "<script" not in rendered
    assert "&lt;script&gt;alert(2)" in rendered and "evil.example/t.png" in rendered  # still there, as text


def test_run_errors_in_markdown_exports_are_inert(engine, capsys) -> None:  # type: ignore[no-untyped-def]
    """A run's own error (a failed run, and an every-item-failed run whose error carries the last item error
    from a provider or bot) is data: Markdown shows it as text, HTML escapes it."""
    from voproshalych_eval import reports
    from voproshalych_eval.cli import main
    from voproshalych_eval.engine import executor
    from voproshalych_eval.plans import Plan

    failed = runs.create_run(engine, "tier2", params={"note": "failed"}, n_items_total=1)
    runs.record_item(engine, failed.id, "q1", {"<img src=x onerror=alert(3)>": 1})  # a key from the data: a column
    runs.fail_run(engine, failed.id, HOSTILE_ERROR)

    def boom(_: int) -> dict[str, object]:
        raise RuntimeError(f"provider said: {HOSTILE_ERROR}")

    all_failed, prog = executor.run_plan(engine, Plan(tier="tier2", items=[("k0", 0), ("k1", 1)], work=boom,
                                                      finalize=lambda recs: {"n_items": len(recs)}))
    assert prog.status == "failed" and HOSTILE_ERROR in (runs.get_run(engine, all_failed).error or "")

    for run_id in (failed.id, all_failed):
        for lang in ("en", "ru"):
            assert main(["runs", "export", str(run_id), "--format", "md", "--lang", lang]) == 0
            _assert_inert_markdown(capsys.readouterr().out)
            _assert_inert_markdown(reports.run_report(engine, run_id, "md", lang=lang))
        page = reports.run_report(engine, run_id, "html")
        body = page.split("<body>", 1)[1]
        assert "&lt;script&gt;alert(2)" in body and "<script>alert(2)" not in body and '<img src=x' not in body

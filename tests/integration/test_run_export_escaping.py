"""`runs export` of a run whose items hold hostile questions/answers: Markdown inert, HTML escaped."""

from __future__ import annotations

import re

from markdown_it import MarkdownIt

from voproshalych_eval import runs

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

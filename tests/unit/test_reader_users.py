"""Every file the app reads goes through the one reader: judge samples (``judge --input``), rubrics and
slang dictionaries accept what datasets accept (BOM, CSV) and fail with file, row and field."""

from __future__ import annotations

import json

import pytest

from voproshalych_eval.analytics import text_ru
from voproshalych_eval.datasets.files import RecordFileError
from voproshalych_eval.tiers.judge_metrics import read_rubrics, read_samples


def test_judge_samples_with_bom_and_csv(tmp_path) -> None:  # type: ignore[no-untyped-def]
    p = tmp_path / "s.jsonl"
    p.write_bytes(b"\xef\xbb\xbf" + json.dumps({"id": "a1", "user_input": "Где столовая?", "response": "В корпусе 1.",
                                                  "retrieved_contexts": ["Столовая в корпусе 1."]},
                                                 ensure_ascii=False).encode())
    s = read_samples(p)
    assert s == [{"user_input": "Где столовая?", "response": "В корпусе 1.", "reference": None,
                  "retrieved_contexts": ["Столовая в корпусе 1."], "id": "a1"}]
    c = tmp_path / "s.csv"
    c.write_text('user_input,response,retrieved_contexts\n"Где\nстоловая?",Там,"[""к1"", ""к2""]"\n', encoding="utf-8")
    assert read_samples(c)[0]["retrieved_contexts"] == ["к1", "к2"] and read_samples(c)[0]["user_input"] == "Где\nстоловая?"


@pytest.mark.parametrize(("data", "row", "field", "words"), [
    ('[{"user_input": "а"}, {"user_input": "б", "response": "x\\u0000"}]', 2, "response", "NUL"),
    ('[{"user_input": "а"},\n{"user_input": "б"', 2, None, "truncated"),
    ('[{"user_input": "а"}, {"response": "x"}]', 2, "user_input", "required"),
    ('[{"user_input": "а", "retrieved_contexts": [1]}]', 1, "retrieved_contexts", "list of strings"),
])
def test_judge_samples_errors_name_row_and_field(tmp_path, data, row, field, words) -> None:  # type: ignore[no-untyped-def]
    p = tmp_path / "s.json"
    p.write_text(data, encoding="utf-8")
    with pytest.raises(RecordFileError) as e:
        read_samples(p)
    assert (e.value.file, e.value.row, e.value.field) == ("s.json", row, field) and words in str(e.value)


def test_judge_samples_cp1251(tmp_path) -> None:  # type: ignore[no-untyped-def]
    p = tmp_path / "s.json"
    p.write_bytes(json.dumps([{"user_input": "где общежитие"}], ensure_ascii=False).encode("cp1251"))
    with pytest.raises(RecordFileError, match="cp1251"):
        read_samples(p)
    assert read_samples(p, encoding="cp1251")[0]["user_input"] == "где общежитие"


def test_rubrics_inline_or_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert read_rubrics('{"score1_description": "плохо", "score2_description": "хорошо"}')["score2_description"] == "хорошо"
    p = tmp_path / "r.json"
    p.write_bytes(b"\xef\xbb\xbf" + json.dumps({"score1_description": "плохо"}, ensure_ascii=False).encode())
    assert read_rubrics(str(p)) == {"score1_description": "плохо"}
    with pytest.raises(RecordFileError) as e:
        read_rubrics('{"score1_description": 5}')
    assert e.value.field == "score1_description"
    with pytest.raises(RecordFileError, match="truncated"):
        read_rubrics('{"score1_description": "пло')


def test_slang_files(tmp_path) -> None:  # type: ignore[no-untyped-def]
    p = tmp_path / "slang.csv"
    p.write_text("\ufeffстипуха;стипендия\nобщага;общежитие\n", encoding="utf-8")  # no header row, semicolons
    assert text_ru.load_slang(p, merge_defaults=False) == {"стипуха": "стипендия", "общага": "общежитие"}
    p.write_text("slang,normal\nпара,\n", encoding="utf-8")
    with pytest.raises(RecordFileError) as e:
        text_ru.load_slang(p)
    assert (e.value.row, e.value.field) == (2, "normal")
    j = tmp_path / "slang.json"
    j.write_text('{"бассик": "бассейн", "бассик": "бассейн2"}', encoding="utf-8")
    with pytest.raises(RecordFileError, match="twice"):
        text_ru.load_slang(j)

"""The one file reader (voproshalych_eval.datasets.files): every case of the issue, with hand-made bytes,
and a hypothesis round trip (whatever text a record holds comes back unchanged from CSV, JSON and JSONL)."""

from __future__ import annotations

import csv
import io
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from voproshalych_eval.datasets.files import (
    MAX_FIELD_CHARS,
    FieldError,
    RecordFileError,
    as_bool,
    as_datetime,
    as_int,
    csv_cell,
    parse_json_object,
    read_file,
    read_json_object,
)


def read(name: str, data: bytes | str, **kw):  # type: ignore[no-untyped-def]
    return read_file(name, data=data.encode("utf-8") if isinstance(data, str) else data, **kw)


def err(name: str, data: bytes | str, **kw) -> RecordFileError:
    with pytest.raises(RecordFileError) as e:
        read(name, data, **kw)
    return e.value


# ------------------------------------------------------------------ CSV keeps every character of a field


def test_csv_quoted_newlines_u2028_form_feed_kept() -> None:
    f = read("a.csv", 'id,question,answer\n1,"две\nстроки","a\r\nb"\n2,раз\u2028два,x\x0cy\n3,"a\rb",\u2029\x85\x1c\n')
    assert [r["question"] for r in f.records] == ["две\nстроки", "раз\u2028два", "a\rb"]
    assert [r["answer"] for r in f.records] == ["a\r\nb", "x\x0cy", "\u2029\x85\x1c"]
    assert f.rows == [2, 3, 4]  # spreadsheet rows: a record with line breaks is one row


def test_csv_bare_carriage_return_in_an_unquoted_value_is_data() -> None:
    # Python's csv writer (and pandas) with lineterminator="\n" leave a lone \r unquoted (found by the import fuzz test)
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([["id", "q"], ["1", "a\rb"], ["2", "c"]])
    assert read("a.csv", buf.getvalue()).records == [{"id": "1", "q": "a\rb"}, {"id": "2", "q": "c"}]
    assert read("a.csv", "id,q\r1,x\r2,y\r").records == [{"id": "1", "q": "x"}, {"id": "2", "q": "y"}]  # old Mac


def test_csv_row_numbers_count_records_not_lines() -> None:
    e = err("a.csv", 'id,q,score\n1,"multi\nline\ntext",5\n2,x,5,extra\n')
    assert (e.row, e.line) == (3, 5) and "row 3 (line 5)" in str(e) and "3 columns" in e.message


def test_bom_accepted_in_every_format() -> None:
    assert read("a.csv", "\ufeffid,q\n1,x\n").columns == ["id", "q"]
    assert read("a.json", '\ufeff[{"q": "x"}]').records == [{"q": "x"}]
    assert read("a.jsonl", '\ufeff{"q": "x"}\n').records == [{"q": "x"}]
    assert read("a.csv", "id,q\n1,ж\n".encode("utf-16")).records == [{"id": "1", "q": "ж"}]
    assert read_json_object("r.json", data="\ufeff{\"a\": \"b\"}".encode()) == {"a": "b"}


def test_semicolon_and_tab_delimiters_from_the_header() -> None:
    assert read("a.csv", "id;question\n1;да, конечно\n").records == [{"id": "1", "question": "да, конечно"}]
    assert read("a.tsv", "id\tq\n1\ta;b,c\n").records == [{"id": "1", "q": "a;b,c"}]


def test_csv_broken_quote_names_row_and_column() -> None:
    e = err("a.csv", 'id,question,answer\n1,ok,ok\n2,"цитата "внутри" кавычек",x\n')
    assert (e.row, e.field) == (3, "question") and "quote" in e.message
    e = err("a.csv", 'id,question,answer\n1,ok,"не закрыта\n2,x,y\n')
    assert (e.row, e.field) == (2, "answer")


def test_csv_header_problems() -> None:
    assert err("a.csv", "").message == "the file is empty"
    assert "no header" in err("a.csv", "\n1,2\n").message
    e = err("a.csv", "id,q,q\n1,2,3\n")
    assert (e.row, e.field) == (1, "q") and "duplicate" in e.message
    e = err("a.csv", "id,,q\n1,lost,3\n")
    assert (e.row, e.field) == (2, "column 2")
    assert read("a.csv", "id,q,\n1,x,\n").records == [{"id": "1", "q": "x"}]  # a trailing comma


def test_blank_lines_are_skipped_but_short_rows_are_errors() -> None:
    assert read("a.csv", "id,q\n\n1,x\n\n").rows == [3]
    assert "1 values but the header has 2" in err("a.csv", "id,q\n1\n").message


# ------------------------------------------------------------------ size limits


def test_csv_field_over_131072_characters_is_read() -> None:
    big = "ы" * 200_000
    f = read("a.csv", f'id,answer\n1,"{big}"\n')
    assert f.records[0]["answer"] == big


def test_field_over_the_limit_is_a_row_error_in_every_format() -> None:
    big = "x" * (MAX_FIELD_CHARS + 1)
    for name, data in (("a.csv", f"id,answer\n1,ok\n2,{big}\n"),
                       ("a.jsonl", '{"answer": "ok"}\n' + json.dumps({"answer": big}) + "\n"),
                       ("a.json", json.dumps([{"answer": "ok"}, {"answer": big}]))):
        e = err(name, data)
        assert (e.row, e.field) == (2 if name != "a.csv" else 3, "answer") and "limit" in e.message
    assert err("a.csv", "id,answer\n1,xxxxx\n", max_field_chars=4).field == "answer"


# ------------------------------------------------------------------ text a database cannot hold


def test_nul_is_a_row_error_and_skippable() -> None:
    e = err("a.csv", "id,q\n1,a\x00b\n2,ok\n")
    assert (e.row, e.field) == (2, "q") and "NUL" in e.message
    f = read("a.csv", "id,q\n1,a\x00b\n2,ok\n", skip_bad_rows=True)
    assert f.records == [{"id": "2", "q": "ok"}] and [b.row for b in f.bad_rows] == [2]
    e = err("a.json", '[{"q": "ok"}, {"q": "a\\u0000"}]')
    assert (e.row, e.field) == (2, "q")


def test_lone_surrogates() -> None:
    e = err("a.jsonl", '{"q": "ok"}\n{"q": ["x", "\\udc00"]}\n')
    assert (e.row, e.field) == (2, "q") and "surrogate" in e.message
    # a surrogate written raw into a CSV file is not UTF-8: refused as an encoding problem, row and field named
    raw = "id,q\n1,ok\n2,a\ud800b\n".encode("utf-8", "surrogatepass")
    e = err("a.csv", raw)
    assert (e.row, e.field) == (3, "q") and "not UTF-8" in e.message


# ------------------------------------------------------------------ encodings


def test_cp1251_refused_with_a_hint_and_readable_when_named() -> None:
    data = "id,question\n1,hello\n2,где общежитие\n".encode("cp1251")
    e = err("a.csv", data)
    assert (e.row, e.field) == (3, "question") and "cp1251" in e.message
    assert read("a.csv", data, encoding="cp1251").records[1]["question"] == "где общежитие"
    e = err("a.json", json.dumps([{"q": "ёлка"}], ensure_ascii=False).encode("cp1251"))
    assert e.row == 1 and e.field == "q" and "cp1251" in e.message
    e = err("a.csv", b"id,q\n1,\x98\n", encoding="cp1251")
    assert "not valid cp1251" in e.message and e.line == 2
    assert "unknown encoding" in err("a.csv", b"id\n1\n", encoding="no-such-codec").message


def test_a_stray_byte_in_a_utf8_file_is_not_called_cp1251() -> None:
    e = err("a.csv", "id,q\n1,привет как дела\n2,".encode() + b"\xed\xa0\x80" + "ещё текст\n".encode())
    assert (e.row, e.field) == (3, "q") and "not UTF-8" in e.message and "cp1251" not in e.message


def test_undecodable_bytes_never_silently_replaced() -> None:
    e = err("a.jsonl", b'{"q": "ok"}\n{"q": "\xff\xfe"}\n', skip_bad_rows=True)
    assert e.row == 2 and "not UTF-8" in e.message  # an encoding problem is never "just a bad row"


# ------------------------------------------------------------------ JSON / JSONL


def test_truncated_json_names_the_element() -> None:
    e = err("a.json", '[{"q": "a"},\n {"q": "b"},\n {"q": "c')
    assert e.row == 3 and e.line == 3 and "truncated" in e.message
    assert err("a.json", '[{"q": "a"}, {"q": "b"}').row == 2
    assert err("a.json", '[{"q": "a"}] x').row is None
    e = err("a.jsonl", '{"q": "a"}\n{"q": "b"')
    assert e.row == 2 and "truncated" in e.message


def test_json_duplicate_keys_nan_and_non_objects() -> None:
    e = err("a.json", '[{"q": "a", "q": "b"}]')
    assert (e.row, e.field) == (1, "q") and "twice" in e.message
    assert "NaN" in err("a.json", '[{"score": NaN}]').message
    assert err("a.json", '[{"score": 1e999}]').field == "score"
    e = err("a.json", '[{"q": "a"}, 5]')
    assert e.row == 2 and "JSON object" in e.message
    assert read("a.json", '{"items": [{"q": "a"}]}').records == [{"q": "a"}]
    assert "expected a JSON array" in err("a.json", '{"other": 1}').message


def test_jsonl_lines_split_on_newline_only() -> None:
    f = read("a.jsonl", '{"q": "a\u2028b\x0cc"}\r\n\n{"q": "d"}\n')
    assert f.records == [{"q": "a\u2028b\x0cc"}, {"q": "d"}] and f.rows == [1, 3]


def test_json_object_files() -> None:
    assert parse_json_object('{"score1_description": "плохо"}', "--rubrics") == {"score1_description": "плохо"}
    e = RecordFileError
    with pytest.raises(e, match="expected a JSON object"):
        parse_json_object("[1]", "r.json")
    with pytest.raises(e, match="cp1251"):
        read_json_object("r.json", data='{"a": "ёлка"}'.encode("cp1251"))
    with pytest.raises(e) as ex:
        parse_json_object('{"a": "x\\u0000"}', "r.json")
    assert ex.value.field == "a"


def test_unsupported_and_missing_files(tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert "unsupported" in err("a.xlsx", b"").message
    with pytest.raises(RecordFileError, match="file not found"):
        read_file(tmp_path / "none.csv")


# ------------------------------------------------------------------ typed values


def test_as_int_range_and_types() -> None:
    assert [as_int(v, "id") for v in ("7", " 7 ", "7.0", 7.0, 7, "-3", None, "  ")] == [7, 7, 7, 7, 7, -3, None, None]
    for bad in ("7.5", 7.5, True, "abc", "1e3", [1], float("nan")):
        with pytest.raises(FieldError):
            as_int(bad, "id")
    with pytest.raises(FieldError, match="between -2147483648 and 2147483647"):
        as_int(2**31, "user_id")
    with pytest.raises(FieldError, match="got -2147483649"):
        as_int(str(-(2**31) - 1), "id")
    assert as_int(2**31 - 1, "id") == 2**31 - 1


def test_as_bool_and_datetime() -> None:
    assert [as_bool(v, "f") for v in ("t", "F", "да", "Нет", 1, 0, True, None, "")] == [
        True, False, True, False, True, False, True, None, None]
    with pytest.raises(FieldError):
        as_bool("maybe", "f")
    ts = as_datetime("2024-09-02 10:15:23.5+05", "created_at")  # psql's text format
    assert ts is not None and ts.utcoffset().total_seconds() == 5 * 3600 and ts.microsecond == 500_000
    assert as_datetime("2025-01-01T00:00:00Z", "t").utcoffset().total_seconds() == 0  # type: ignore[union-attr]
    with pytest.raises(FieldError, match="ISO"):
        as_datetime("вчера", "created_at")


# ------------------------------------------------------------------ round trip (hypothesis)

TRICKY = st.sampled_from(["\n", "\r\n", "\r", "\u2028", "\u2029", "\x0c", "\x0b", "\x85", "\x1c", "\x1e", '"', "'",
                          ",", ";", "\t", "|", " ", "ё", "Ж", "🙂", "\ufeff", "\\", "[", "{"])
TEXT = st.lists(st.one_of(TRICKY, st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")),
                max_size=25).map("".join)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(TEXT, TEXT), min_size=1, max_size=5), fmt=st.sampled_from(["csv", "json", "jsonl"]),
       bom=st.booleans(), delim=st.sampled_from([",", ";", "\t"]), eol=st.sampled_from(["\n", "\r\n"]))
def test_round_trip_keeps_every_field(rows, fmt, bom, delim, eol) -> None:  # type: ignore[no-untyped-def]
    records = [{"id": str(i), "question": q, "answer": a} for i, (q, a) in enumerate(rows, start=1)]
    if fmt == "csv":
        buf = io.StringIO()
        # "id" last: with lineterminator "\n" the writer leaves a value's trailing "\r" unquoted, and at the end
        # of a line that is a CRLF no reader can tell apart (inside a line a bare "\r" is read as data)
        w = csv.DictWriter(buf, fieldnames=["question", "answer", "id"], delimiter=delim, lineterminator=eol)
        w.writeheader()
        # cells escaped as the product's CSV writer escapes them (a leading "'" before a formula start): the
        # reader reverses exactly that, so a raw "'\r…" cell from another writer would lose its quote
        w.writerows([{k: csv_cell(v) for k, v in r.items()} for r in records])
        text = buf.getvalue()
    elif fmt == "json":
        text = json.dumps(records, ensure_ascii=False, indent=1)
    else:
        text = "\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n"
    f = read(f"x.{fmt}", ("\ufeff" if bom else "") + text)
    assert f.records == records and not f.bad_rows

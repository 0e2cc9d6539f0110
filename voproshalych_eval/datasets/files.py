"""Record files: the one reader of every tabular input (datasets, question-log exports, judge samples,
slang dictionaries, rubrics) and the value checks their validators share.

Formats (by file suffix): ``.csv`` (also ``.tsv``), ``.jsonl`` (one object per line) and
``.json`` (an array of objects, or an object holding such an array under one of :data:`JSON_LIST_KEYS`).

What the reader guarantees:

* **Text is decoded once, then parsed.** UTF-8 with or without a BOM (UTF-16 with a BOM too). Any other
  encoding is refused with the row and field where the first undecodable byte sits and a hint when the
  bytes look like Windows-1251 — unless the caller names the encoding (``encoding="cp1251"``).
* **CSV through the** :mod:`csv` **module** over the decoded text: quoted line breaks, U+2028, form feeds
  and every other character inside a field are kept exactly; only ``\\n``, ``\\r\\n`` and ``\\r`` end a
  record. The delimiter (``,`` ``;`` or tab) is taken from the header line. Quoting is strict: a stray
  quote is an error naming the row and column, never a silently rewritten value. Every record must have
  as many cells as the header (blank lines are skipped); duplicate column names are refused.
* **JSON / JSONL**: duplicate keys, ``NaN``/``Infinity`` and truncated input are errors naming the row
  (the 1-based element of the array, or the line of a JSONL file).
* **Text that a database cannot hold is refused, not altered**: NUL characters, lone surrogates, and any
  single value longer than ``max_field_chars`` (:data:`MAX_FIELD_CHARS`; the :mod:`csv` module's own
  131,072-character cell limit is lifted); files over :data:`MAX_FILE_BYTES` are refused before reading.

Every problem is a :class:`RecordFileError` whose text reads ``file, row N, field 'x': message``. Row
numbers: CSV — the spreadsheet row (the header is row 1; a record with quoted line breaks is still one
row; the first line of the record is added when it differs); JSONL — the line; JSON — the element.

**Formula cells** (OWASP "CSV injection"): every CSV the product writes goes through :func:`write_csv` /
:func:`dataframe_csv`, which prefix a single quote to a text cell that starts with ``=``, ``+``, ``-``, ``@``,
a tab or a carriage return (after any quotes already there), so a spreadsheet shows it as text and never
evaluates it; plain numbers (``-5``, ``+3.5``, ``1e-3``) are left as they are. The reader removes that one quote
from a cell that starts with quotes followed by one of those characters, so an exported file re-imports to
the same values (``'=x`` written as ``''=x`` reads back as ``'=x``).

Problems confined to one record (NUL, surrogate, too long, a JSONL line that is not JSON, a CSV record
with the wrong number of cells, an array element that is not an object) are *row problems*: with
``skip_bad_rows=True`` they are collected in :attr:`RecordFile.bad_rows` and the record is left out.
Problems that make the rest of the file unreliable (encoding, a broken CSV quote, truncated JSON, a bad
header) always raise.
"""

from __future__ import annotations

import codecs
import csv
import io
import itertools
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from voproshalych_eval.errors import VoproshalychEvalError

JSON_LIST_KEYS = ("items", "samples", "data", "questions", "records", "question_answer")
SUFFIX_FORMAT = {".csv": "csv", ".tsv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json"}
MAX_FIELD_CHARS = 1_000_000
"""Longest single value accepted (characters). Chunks are ~4 kB; a megabyte in one cell is a broken file."""
MAX_FILE_BYTES = 512 * 1024 * 1024
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

# the csv module refuses cells over 131,072 characters with a bare csv.Error; cell length is checked by
# this module instead (with the row and field), so the csv limit only has to stay out of the way
if csv.field_size_limit() < 2**31 - 1:
    csv.field_size_limit(2**31 - 1)


class RecordFileError(VoproshalychEvalError, ValueError):
    """A problem in an input file: ``file, row N, field 'x': message`` (row and field where known)."""

    def __init__(self, file: str, row: int | None, field: str | None, message: str, *, line: int | None = None) -> None:
        self.file, self.row, self.field, self.message, self.line = file, row, field, message, line
        where = file
        if row is not None:
            where += f", row {row}"
            if line is not None and line != row:
                where += f" (line {line})"
        elif line is not None:
            where += f", line {line}"
        if field:
            where += f", field '{field}'"
        super().__init__(f"{where}: {message}")

    def to_dict(self) -> dict[str, Any]:
        return {"row": self.row, "field": self.field, "message": self.message}


class FieldError(VoproshalychEvalError, ValueError):
    """A bad value, raised by the value checks below; the caller adds the file and row."""

    def __init__(self, field_name: str | None, message: str) -> None:
        self.field, self.message = field_name, message
        super().__init__(message)


@dataclass
class RecordFile:
    """What :func:`read_file` read: the good records, their row numbers, and the rows left out."""

    file: str
    format: str
    encoding: str
    records: list[dict[str, Any]]
    rows: list[int]
    columns: list[str]
    bad_rows: list[RecordFileError] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.records)

    def error(self, row: int | None, exc: FieldError) -> RecordFileError:
        return RecordFileError(self.file, row, exc.field, exc.message)


# ------------------------------------------------------------------------------------ decoding

_BAD_TEXT = re.compile("[\x00\ud800-\udfff]")
_BARE_CR = re.compile("\r(?!\n)")
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")


def _looks_cp1251(data: bytes, lossy_text: str) -> bool:
    """Most non-ASCII bytes are invalid UTF-8 (not a UTF-8 file with a stray byte) and read as Cyrillic in cp1251."""
    n_high = len(data.translate(None, bytes(range(128))))  # the bytes >= 0x80
    if not n_high or len(_ESCAPED_BYTE.findall(lossy_text)) < 0.5 * n_high:
        return False
    try:
        text = data.decode("cp1251")
    except UnicodeDecodeError:
        return False
    high = [c for c in text if ord(c) > 127]
    return sum(1 for c in high if "\u0400" <= c <= "\u04ff") >= 0.8 * len(high)


def _decode(name: str, data: bytes, encoding: str | None) -> tuple[str, str, bool]:
    """``(text, encoding used, lossy)``; lossy text keeps undecodable bytes as U+DC80..U+DCFF."""
    if encoding:
        try:
            return data.decode(encoding).removeprefix("\ufeff"), encoding, False
        except LookupError:
            raise RecordFileError(name, None, None, f"unknown encoding {encoding!r}") from None
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise RecordFileError(
                name, None, None, f"byte 0x{data[exc.start]:02X} is not valid {encoding} text", line=line
            ) from None
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16"), "utf-16", False
        except UnicodeDecodeError as exc:
            raise RecordFileError(name, None, None, f"not valid UTF-16 text ({exc.reason})") from None
    try:
        return data.decode("utf-8-sig"), "utf-8", False
    except UnicodeDecodeError:
        return data.decode("utf-8-sig", errors="surrogateescape"), "utf-8", True


def _encoding_message(data: bytes, lossy_text: str, char: str) -> str:
    byte = ord(char) - 0xDC00
    msg = f"the file is not UTF-8 text (byte 0x{byte:02X})"
    if _looks_cp1251(data, lossy_text):
        msg += "; it looks like Windows-1251 (cp1251): save it as UTF-8, or name the encoding (--encoding cp1251)"
    return msg


# ------------------------------------------------------------------------------------ value checks on text


def check_text(value: str, field_name: str | None, *, max_chars: int = MAX_FIELD_CHARS) -> None:
    """Refuse text a database cannot store as given: NUL, lone surrogates, more than ``max_chars`` characters."""
    if len(value) > max_chars:
        raise FieldError(field_name, f"the value has {len(value):,} characters; the limit is {max_chars:,}")
    m = _BAD_TEXT.search(value)
    if m is None:
        return
    c = m.group()
    if c == "\x00":
        raise FieldError(field_name, f"contains a NUL character (\\x00) at position {m.start() + 1}, "
                                     "which text columns cannot store")
    raise FieldError(field_name, f"contains a lone surrogate (\\u{ord(c):04x}) at position {m.start() + 1}: "
                                 "not valid Unicode text")


def _check_value(value: Any, field_name: str | None, max_chars: int) -> None:
    if isinstance(value, str):
        check_text(value, field_name, max_chars=max_chars)
    elif isinstance(value, float) and not math.isfinite(value):
        raise FieldError(field_name, f"the number {value} is out of range")
    elif isinstance(value, list):
        for v in value:
            _check_value(v, field_name, max_chars)
    elif isinstance(value, dict):
        for k, v in value.items():
            check_text(k, field_name, max_chars=max_chars)
            _check_value(v, field_name, max_chars)


def _check_record(rec: Mapping[str, Any], max_chars: int) -> None:
    for k, v in rec.items():
        check_text(k, k or None, max_chars=max_chars)
        _check_value(v, k, max_chars)


# ------------------------------------------------------------------------------------ CSV

_FORMULA_START = re.compile("'*[=+\\-@\t\r]")
_QUOTED_FORMULA = re.compile("'+[=+\\-@\t\r]")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)


def csv_cell(value: Any) -> Any:
    """A value as the CSV writers write it: text a spreadsheet would evaluate as a formula (starting with
    ``=``, ``+``, ``-``, ``@``, tab or CR, after any leading quotes) gets one leading ``'``; plain numbers and
    other values are returned unchanged (OWASP's rule for CSV injection)."""
    if isinstance(value, str) and _FORMULA_START.match(value) and not _PLAIN_NUMBER.fullmatch(value):
        return "'" + value
    return value


def csv_value(cell: str) -> str:
    """The reader's inverse of :func:`csv_cell`: one leading quote removed from an escaped formula cell."""
    if cell.startswith("'") and _QUOTED_FORMULA.match(cell) and not _PLAIN_NUMBER.fullmatch(cell[1:]):
        return cell[1:]
    return cell


def write_csv(rows: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """CSV text of ``rows`` (``columns`` in order; a missing or None value is an empty cell), formula cells
    neutralised (:func:`csv_cell`); RFC 4180 records ending in ``\\r\\n``, so every line break inside a value
    (a lone ``\\r`` too) is quoted."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow([csv_cell(c) for c in columns])
    for r in rows:
        w.writerow([csv_cell("" if (v := r.get(c)) is None else v) for c in columns])
    return buf.getvalue()


def dataframe_csv(df: Any) -> str:
    """A pandas DataFrame as CSV text (no index, ``\\r\\n`` records like :func:`write_csv`), formula cells
    neutralised (:func:`csv_cell`)."""
    safe = df.rename(columns=lambda c: csv_cell(str(c)))
    safe = safe.apply(lambda col: col if col.dtype.kind in "biufcmM" else col.map(csv_cell))
    return safe.to_csv(index=False, lineterminator="\r\n")



class _Lines:
    """Feeds the csv reader line by line (``\\n``, ``\\r\\n``, ``\\r`` only) and remembers each record's lines."""

    def __init__(self, text: str | Iterator[str]) -> None:
        self._it = iter(io.StringIO(text, newline="")) if isinstance(text, str) else text
        self.line = 0
        self.pending: list[str] = []

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        s = next(self._it)
        self.line += 1
        self.pending.append(s)
        return s

    def take(self) -> tuple[int, str]:
        """(first line number, raw text) of the record just read."""
        first = self.line - len(self.pending) + 1
        raw = "".join(self.pending)
        self.pending = []
        return first, raw


def _bad_quote_column(raw: str, delimiter: str) -> int:
    """0-based column of a record where strict CSV quoting breaks (a stray quote or a quote left open)."""
    col, i, n, in_q, at_start = 0, 0, len(raw), False, True
    while i < n:
        c = raw[i]
        if in_q:
            if c == '"':
                if i + 1 < n and raw[i + 1] == '"':
                    i += 2
                    continue
                in_q = False
                i += 1
                if i < n and raw[i] not in (delimiter, "\r", "\n"):
                    return col
                continue
            i += 1
            continue
        if c == delimiter:
            col, at_start = col + 1, True
        elif c == '"' and at_start:
            in_q, at_start = True, False
        else:
            at_start = False
        i += 1
    return col


def _delimiter(header_line: str) -> str:
    counts = {d: 0 for d in (",", ";", "\t")}
    in_q = False
    for c in header_line:
        if c == '"':
            in_q = not in_q
        elif not in_q and c in counts:
            counts[c] += 1
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] else ","


def _delimiter_in_unquoted(line: str, delimiter: str) -> bool:
    in_q = False
    for c in line:
        if c == '"':
            in_q = not in_q
        elif c == delimiter and not in_q:
            return True
    return False


def _read_csv(name: str, text: str, *, skip_bad_rows: bool, max_chars: int, on_escaped: Callable[[str], str] | None,
              ) -> tuple[list[dict[str, Any]], list[int], list[str], list[RecordFileError]]:
    first_line = text.split("\n", 1)[0]
    # A file whose records end in \n (or \r\n) may hold a bare \r inside a value that its writer left
    # unquoted (Python's csv and pandas do so with lineterminator="\n"): it is data, not a line break.
    cr = None
    if "\n" in text and (bare := _BARE_CR.search(text)):
        if not _delimiter_in_unquoted(first_line, _delimiter(first_line)):
            # one column: a bare \r may be a line break or data, and either reading silently changes the rows
            raise RecordFileError(name, None, None, "a bare carriage return (CR) in a file whose lines end in LF: "
                                  "in a one-column file it cannot be told from a line break; quote the value or "
                                  "save the file with one kind of line ending", line=text.count("\n", 0, bare.start()) + 1)
        cr = next((chr(c) for c in range(0xE000, 0xF900) if chr(c) not in text), None)
        text = _BARE_CR.sub(cr, text) if cr else text
    stream = _CsvStream(name, _Lines(text), first_line, cr=cr, skip_bad_rows=skip_bad_rows, max_chars=max_chars,
                        on_escaped=on_escaped)
    records: list[dict[str, Any]] = []
    rows: list[int] = []
    for rec, row in stream:
        records.append(rec)
        rows.append(row)
    return records, rows, stream.columns, stream.bad


class _CsvStream:
    """The records of a CSV line source, one at a time (``(record, row)``); :attr:`columns` is known after the
    first record (or the end), :attr:`bad` collects row problems when bad rows are skipped."""

    def __init__(self, name: str, lines: _Lines, first_line: str, *, cr: str | None, skip_bad_rows: bool,
                 max_chars: int, on_escaped: Callable[[str], str] | None) -> None:
        self.name, self.lines, self.cr = name, lines, cr
        self.delim = _delimiter(first_line)
        self.skip_bad_rows, self.max_chars, self.on_escaped = skip_bad_rows, max_chars, on_escaped
        self.header: list[str] | None = None
        self.bad: list[RecordFileError] = []

    @property
    def columns(self) -> list[str]:
        return [h for h in self.header or [] if h]

    def read_header(self) -> list[str]:
        """Read up to the header (the stream's first record) and return the named columns."""
        if self.header is None:
            self._it = self._records()
            self._first = next(self._it, None)
        return self.columns

    def __iter__(self) -> Iterator[tuple[dict[str, Any], int]]:
        if self.header is None:
            self.read_header()
        if self._first is not None:
            yield self._first
        yield from self._it

    def _records(self) -> Iterator[tuple[dict[str, Any], int]]:
        name, lines, cr, delim = self.name, self.lines, self.cr, self.delim
        reader = csv.reader(lines, delimiter=delim, strict=True)
        header: list[str] | None = None
        row = 0
        while True:
            try:
                cells = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                start, raw = lines.take()
                col = _bad_quote_column(raw, delim)
                fname = header[col] if header and col < len(header) and header[col] else f"column {col + 1}"
                raise RecordFileError(name, row + 1, fname, f"broken CSV quoting ({exc}); a quote inside a value must be "
                                      'doubled ("") and the value quoted', line=start) from None
            start, _raw = lines.take()
            row += 1
            if header is None:
                if not cells or all(not c.strip() for c in cells):
                    raise RecordFileError(name, 1, None, "the CSV file has no header row (the first line is empty)")
                header = [(c.replace(cr, "\r") if cr else c).strip() for c in cells]
                for i, h in enumerate(header):
                    if self.on_escaped is not None and (m := _ESCAPED_BYTE.search(h)):
                        raise RecordFileError(name, 1, None, self.on_escaped(m.group()), line=start)
                    check_text_or_raise(name, 1, h or f"column {i + 1}", h, self.max_chars)
                    if h and header.index(h) != i:
                        raise RecordFileError(name, 1, h, f"duplicate column name (columns {header.index(h) + 1} and {i + 1})")
                self.header = header
                continue
            if not cells or (len(cells) == 1 and len(header) > 1 and not cells[0].strip()):
                continue  # a blank line
            if cr:
                cells = [c.replace(cr, "\r") for c in cells]
            if self.on_escaped is not None:  # undecodable bytes: the file's encoding is wrong, not this row
                for i, v in enumerate(cells):
                    if m := _ESCAPED_BYTE.search(v):
                        fname = (header[i] if i < len(header) else "") or f"column {i + 1}"
                        raise RecordFileError(name, row, fname, self.on_escaped(m.group()), line=start)
            try:
                if len(cells) != len(header):
                    raise FieldError(None, f"{len(cells)} values but the header has {len(header)} columns "
                                           "(an unquoted delimiter or line break in a value?)")
                rec: dict[str, Any] = {}
                for i, (h, v) in enumerate(zip(header, cells, strict=True)):
                    fname = h or f"column {i + 1}"
                    check_text(v, fname, max_chars=self.max_chars)
                    if not h:
                        if v.strip():
                            raise FieldError(fname, "a value in a column without a name in the header")
                        continue
                    rec[h] = csv_value(v)
            except FieldError as exc:
                _row_problem(RecordFileError(name, row, exc.field, exc.message, line=start), self.skip_bad_rows, self.bad)
                continue
            yield rec, row
        if header is None:
            raise RecordFileError(name, None, None, "the file is empty")


def check_text_or_raise(name: str, row: int | None, field_name: str, value: str, max_chars: int) -> None:
    try:
        check_text(value, field_name, max_chars=max_chars)
    except FieldError as exc:
        raise RecordFileError(name, row, exc.field, exc.message) from None


# ------------------------------------------------------------------------------------ JSON / JSONL


class _DuplicateKey(VoproshalychEvalError, ValueError):
    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(key)


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


_DECODER = json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_no_constant, strict=False)
"""Duplicate keys and NaN/Infinity are errors; raw control characters inside strings are kept (value-preserving)."""
_WS = " \t\n\r"


def _skip_ws(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i] in _WS:
        i += 1
    return i


def _json_value(name: str, text: str, pos: int, row: int | None, *, line_base: int = 0) -> tuple[Any, int]:
    try:
        return _DECODER.raw_decode(text, pos)
    except json.JSONDecodeError as exc:
        at_end = exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string")
        msg = exc.msg + (" (truncated file?)" if at_end else "")
        raise RecordFileError(name, row, None, f"invalid JSON at column {exc.colno}: {msg}",
                              line=line_base + exc.lineno) from None
    except _DuplicateKey as exc:
        raise RecordFileError(name, row, exc.key, "the key appears twice in one object") from None
    except ValueError as exc:  # NaN / Infinity
        raise RecordFileError(name, row, None, f"invalid JSON: {exc}") from None


def _read_json_array(name: str, text: str, start: int) -> list[Any]:
    items: list[Any] = []
    i = _skip_ws(text, start + 1)
    if i < len(text) and text[i] == "]":
        i = _skip_ws(text, i + 1)
    else:
        while True:
            row = len(items) + 1
            if i >= len(text):
                raise RecordFileError(name, row, None, "the JSON array ends early (truncated file?)",
                                      line=text.count("\n") + 1)
            obj, end = _json_value(name, text, i, row)
            items.append(obj)
            i = _skip_ws(text, end)
            if i >= len(text):
                raise RecordFileError(name, row, None, "the JSON array is not closed with ']' (truncated file?)",
                                      line=text.count("\n") + 1)
            if text[i] == ",":
                i = _skip_ws(text, i + 1)
                continue
            if text[i] == "]":
                i = _skip_ws(text, i + 1)
                break
            raise RecordFileError(name, row, None, f"expected ',' or ']' after element {row}",
                                  line=text.count("\n", 0, i) + 1)
    if i < len(text):
        raise RecordFileError(name, None, None, "extra data after the JSON array", line=text.count("\n", 0, i) + 1)
    return items


def _read_json(name: str, text: str, list_keys: tuple[str, ...]) -> tuple[list[Any], list[int]]:
    start = _skip_ws(text, 0)
    if start >= len(text):
        raise RecordFileError(name, None, None, "the file is empty")
    if text[start] == "[":
        items = _read_json_array(name, text, start)
        return items, list(range(1, len(items) + 1))
    parsed, end = _json_value(name, text, start, None)
    if _skip_ws(text, end) < len(text):
        raise RecordFileError(name, None, None, "extra data after the JSON value (a JSONL file named .json?)",
                              line=text.count("\n", 0, end) + 1)
    if isinstance(parsed, dict):
        for k in list_keys:
            if isinstance(parsed.get(k), list):
                return parsed[k], list(range(1, len(parsed[k]) + 1))
        keys = ", ".join(repr(k) for k in list_keys)
        raise RecordFileError(name, None, None, f"expected a JSON array of objects, or an object with a list under {keys}")
    raise RecordFileError(name, None, None, "expected a JSON array of objects")


def _read_jsonl(name: str, text: str, *, skip_bad_rows: bool) -> tuple[list[Any], list[int], list[RecordFileError]]:
    items: list[Any] = []
    rows: list[int] = []
    bad: list[RecordFileError] = []
    # split on \n only: U+2028, form feeds etc. are legal inside JSON strings
    for i, line in enumerate(text.split("\n"), start=1):
        if not line.strip(_WS):
            continue
        try:
            obj, end = _json_value(name, line, _skip_ws(line, 0), i, line_base=i - 1)
            if _skip_ws(line, end) < len(line):
                raise RecordFileError(name, i, None, "extra data after the JSON object (one object per line)")
        except RecordFileError as exc:
            _row_problem(RecordFileError(name, i, exc.field, exc.message), skip_bad_rows, bad)
            continue
        items.append(obj)
        rows.append(i)
    return items, rows, bad


# ------------------------------------------------------------------------------------ the reader


def _row_problem(err: RecordFileError, skip_bad_rows: bool, bad: list[RecordFileError]) -> None:
    """A problem confined to one record: raised, or collected when bad rows are skipped."""
    if not skip_bad_rows:
        raise err from None
    bad.append(err)


def _file_bytes(p: Path, fname: str, data: bytes | None) -> bytes:
    """The file's bytes (or ``data``), refused when missing or over :data:`MAX_FILE_BYTES`."""
    if data is None:
        if not p.is_file():
            raise RecordFileError(fname, None, None, "file not found")
        size = p.stat().st_size
        if size > MAX_FILE_BYTES:
            raise RecordFileError(fname, None, None, f"the file has {size:,} bytes; the limit is {MAX_FILE_BYTES:,}")
        return p.read_bytes()
    if len(data) > MAX_FILE_BYTES:
        raise RecordFileError(fname, None, None, f"the file has {len(data):,} bytes; the limit is {MAX_FILE_BYTES:,}")
    return data


def file_format(path: str | Path) -> str | None:
    """``csv``, ``json`` or ``jsonl`` by the file's suffix (None when unsupported)."""
    return SUFFIX_FORMAT.get(Path(path).suffix.lower())


def read_file(
    path: str | Path,
    *,
    data: bytes | None = None,
    encoding: str | None = None,
    skip_bad_rows: bool = False,
    max_field_chars: int = MAX_FIELD_CHARS,
    list_keys: tuple[str, ...] = JSON_LIST_KEYS,
    name: str | None = None,
) -> RecordFile:
    """Read a CSV / JSON / JSONL file of records (or its bytes ``data``, e.g. an upload called ``path``).

    ``encoding``: None = UTF-8 (BOM optional; UTF-16 with a BOM); otherwise any Python codec name.
    ``skip_bad_rows``: collect row problems in ``bad_rows`` instead of raising (see the module docstring).
    ``name``: how the file is named in errors (default: the path as given).
    """
    p = Path(path)
    fname = name or str(path)
    fmt = file_format(p)
    if fmt is None:
        raise RecordFileError(fname, None, None, f"unsupported file type '{p.suffix}' (use .csv, .json or .jsonl)")
    data = _file_bytes(p, fname, data)
    text, used, lossy = _decode(fname, data, encoding)

    def on_escaped(char: str) -> str:
        return _encoding_message(data, text, char)

    bad: list[RecordFileError] = []
    if fmt == "csv":
        records, rows, columns, bad = _read_csv(fname, text, skip_bad_rows=skip_bad_rows, max_chars=max_field_chars,
                                                on_escaped=on_escaped if lossy else None)
    else:
        try:
            if fmt == "jsonl":
                items, rows, bad = _read_jsonl(fname, text, skip_bad_rows=skip_bad_rows)
            else:
                items, rows = _read_json(fname, text, list_keys)
        except RecordFileError as exc:
            if lossy:  # a syntax error caused by the undecodable bytes: report the encoding
                first = _ESCAPED_BYTE.search(text)
                assert first is not None
                line = text.count("\n", 0, first.start()) + 1
                raise RecordFileError(fname, None, None, on_escaped(first.group()), line=line) from None
            raise exc from None
        records, kept_rows = [], []
        for obj, row in zip(items, rows, strict=True):
            try:
                if not isinstance(obj, dict):
                    raise FieldError(None, f"expected a JSON object, got {_json_type(obj)}")
                if lossy and (m := _ESCAPED_BYTE.search(json.dumps(obj, ensure_ascii=False))):
                    where = _field_with(obj, m.group())
                    raise RecordFileError(fname, row, where, on_escaped(m.group()))
                _check_record(obj, max_field_chars)
            except FieldError as exc:
                _row_problem(RecordFileError(fname, row, exc.field, exc.message), skip_bad_rows, bad)
                continue
            records.append(obj)
            kept_rows.append(row)
        rows = kept_rows
        columns = list(dict.fromkeys(k for r in records for k in r))
    if lossy and fmt == "csv" and (m := _ESCAPED_BYTE.search(text)):
        # undecodable bytes outside any kept record (a header, a skipped row): still not a UTF-8 file
        raise RecordFileError(fname, None, None, on_escaped(m.group()), line=text.count("\n", 0, m.start()) + 1)
    return RecordFile(fname, fmt, used, records, rows, columns, bad)


@dataclass
class RecordStream:
    """Records of a file one at a time (``for record, row in stream``), for imports that must not hold a whole
    large file in memory. :attr:`columns` is known once :meth:`read_header` returned; :attr:`bad_rows` fills
    while iterating (bad rows skipped). Same checks and errors as :func:`read_file`."""

    file: str
    format: str
    encoding: str
    _source: Any
    columns: list[str] = field(default_factory=list)
    streamed: bool = False
    _closer: Any = None

    def read_header(self) -> list[str]:
        if isinstance(self._source, _CsvStream):
            self.columns = self._source.read_header()
        return self.columns

    @property
    def bad_rows(self) -> list[RecordFileError]:
        return self._source.bad if isinstance(self._source, _CsvStream) else self._source.bad_rows

    def __iter__(self) -> Iterator[tuple[dict[str, Any], int]]:
        try:
            if isinstance(self._source, _CsvStream):
                yield from self._source
            else:
                yield from zip(self._source.records, self._source.rows, strict=True)
        finally:
            self.close()

    def close(self) -> None:
        if self._closer is not None:
            self._closer.close()
            self._closer = None


_SCAN_CHUNK = 1 << 20


def _streamable_csv(p: Path, encoding: str | None) -> bool:
    """A CSV file that reads the same line by line: UTF-8 (or the named encoding) text without a bare CR
    next to LF line ends (files the whole-text reader rewrites or refuses take that path instead)."""
    try:
        decoder = codecs.getincrementaldecoder(encoding or "utf-8-sig")()
    except LookupError:
        return False
    has_lf = has_bare_cr = False
    prev_cr = False
    with p.open("rb") as fh:
        head = fh.read(2)
        if head in (b"\xff\xfe", b"\xfe\xff") and not encoding:
            return False  # UTF-16: the whole-text reader decodes it
        fh.seek(0)
        while chunk := fh.read(_SCAN_CHUNK):
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError:
                return False
            has_lf = has_lf or b"\n" in chunk
            if prev_cr and not chunk.startswith(b"\n"):
                has_bare_cr = True
            has_bare_cr = has_bare_cr or re.search(rb"\r(?!\n)", chunk[:-1]) is not None
            prev_cr = chunk.endswith(b"\r")
        if prev_cr:
            has_bare_cr = True
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return not (has_lf and has_bare_cr)


def open_records(
    path: str | Path,
    *,
    data: bytes | None = None,
    encoding: str | None = None,
    skip_bad_rows: bool = False,
    max_field_chars: int = MAX_FIELD_CHARS,
    name: str | None = None,
) -> RecordStream:
    """:func:`read_file` as a :class:`RecordStream`: a CSV file on disk is read line by line (memory stays
    that of one record); other formats, bytes given as ``data`` and files the line reader cannot take as is
    (not UTF-8, UTF-16, a bare CR next to LF line ends) are read whole by :func:`read_file`."""
    p = Path(path)
    fname = name or str(path)
    fmt = file_format(p)
    if data is None and fmt == "csv" and p.is_file() and p.stat().st_size <= MAX_FILE_BYTES and _streamable_csv(p, encoding):
        fh = io.TextIOWrapper(p.open("rb"), encoding=encoding or "utf-8-sig", newline="")
        first = fh.readline()
        lines = _Lines(itertools.chain([first], fh))
        stream = _CsvStream(fname, lines, first.rstrip("\r\n"), cr=None, skip_bad_rows=skip_bad_rows,
                            max_chars=max_field_chars, on_escaped=None)
        return RecordStream(fname, "csv", encoding or "utf-8", stream, streamed=True, _closer=fh)
    f = read_file(p, data=data, encoding=encoding, skip_bad_rows=skip_bad_rows, max_field_chars=max_field_chars,
                  name=name)
    return RecordStream(f.file, f.format, f.encoding, f, columns=list(f.columns))


def read_json_object(
    path: str | Path, *, data: bytes | None = None, encoding: str | None = None, name: str | None = None,
    max_field_chars: int = MAX_FIELD_CHARS,
) -> dict[str, Any]:
    """A file holding one JSON object (rubrics, a slang dictionary), decoded and checked like :func:`read_file`;
    errors name the file and the key (as ``field``)."""
    p = Path(path)
    fname = name or str(path)
    data = _file_bytes(p, fname, data)
    text, _used, lossy = _decode(fname, data, encoding)
    if lossy:
        m = _ESCAPED_BYTE.search(text)
        assert m is not None
        raise RecordFileError(fname, None, None, _encoding_message(data, text, m.group()),
                              line=text.count("\n", 0, m.start()) + 1)
    return parse_json_object(text, fname, max_field_chars=max_field_chars)


def parse_json_object(text: str, name: str, *, max_field_chars: int = MAX_FIELD_CHARS) -> dict[str, Any]:
    """JSON text (a file's, or typed inline) that must be one object; the same checks as :func:`read_json_object`."""
    start = _skip_ws(text, 0)
    if start >= len(text):
        raise RecordFileError(name, None, None, "empty: expected a JSON object")
    obj, end = _json_value(name, text, start, None)
    if _skip_ws(text, end) < len(text):
        raise RecordFileError(name, None, None, "extra data after the JSON object", line=text.count("\n", 0, end) + 1)
    if not isinstance(obj, dict):
        raise RecordFileError(name, None, None, f"expected a JSON object, got {_json_type(obj)}")
    try:
        _check_record(obj, max_field_chars)
    except FieldError as exc:
        raise RecordFileError(name, None, exc.field, exc.message) from None
    return obj


def _field_with(obj: dict[str, Any], char: str) -> str | None:
    for k, v in obj.items():
        if char in k or char in json.dumps(v, ensure_ascii=False):
            return k
    return None


def _json_type(v: Any) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number",
            type(None): "null"}.get(type(v), type(v).__name__)


def read_records(path: str | Path, *, data: bytes | None = None, **kwargs: Any) -> tuple[list[dict[str, Any]], list[int]]:
    """``(records, rows)`` of :func:`read_file` (strict: the first problem raises)."""
    f = read_file(path, data=data, **kwargs)
    return f.records, f.rows


# ------------------------------------------------------------------------------------ columns


def near_column(column: str, known: Sequence[str]) -> str | None:
    """The known column ``column`` is probably meant as: the same name in another case (``Answer``), or a
    close spelling (``qestion``); None when nothing is close."""
    import difflib  # heavy: keeps difflib out of --help (+1 ms)

    folded = {k.casefold(): k for k in known}
    if column.casefold() in folded:
        return folded[column.casefold()]
    close = difflib.get_close_matches(column.casefold(), list(folded), n=1, cutoff=0.8)
    return folded[close[0]] if close else None


def check_columns(file: str, columns: Sequence[str], known: Sequence[str], *, ignore: Sequence[str] = (),
                  allow_extra: bool = False) -> None:
    """Refuse a file with columns the importer would otherwise drop or misread without a word.

    A column that is a near-miss of a known one (another case, a close spelling) is always an error — it is
    surely meant as that column; any other unknown column is an error unless ``allow_extra`` (formats that
    keep extra fields). Columns named in ``ignore`` (the ``--ignore-columns`` option) are left out knowingly.
    The error names every such column, the known column each resembles, and the option."""
    ignored = set(ignore)
    problems: list[str] = []
    for c in columns:
        if c in known or c in ignored:
            continue
        near = near_column(c, known)
        if near is not None and not (allow_extra and near in columns):
            problems.append(f"'{c}' (did you mean '{near}'?)")
        elif not allow_extra:
            problems.append(f"'{c}'")
    if problems:
        names = ",".join(c for c in columns if c not in known and c not in ignored and (
            not allow_extra or ((near := near_column(c, known)) is not None and near not in columns)))
        raise RecordFileError(
            file, 1, None,
            f"unknown column{'s' if len(problems) > 1 else ''} {', '.join(problems)}; known columns: "
            f"{', '.join(known)}. Rename them, or import without them: --ignore-columns {names}")


def split_names(value: str | Sequence[str] | None) -> list[str]:
    """``"a,b"`` or ``["a", "b"]`` -> ``["a", "b"]`` (blank names dropped)."""
    if not value:
        return []
    items = value.split(",") if isinstance(value, str) else list(value)
    return [x.strip() for x in items if x and x.strip()]


# ------------------------------------------------------------------------------------ typed values
# Shared by every validator (datasets, question log, judge samples): one rule per type, errors as
# FieldError(field, message); the caller adds the file and row.

TRUE_WORDS = frozenset({"true", "t", "1", "yes", "y", "да", "show"})
FALSE_WORDS = frozenset({"false", "f", "0", "no", "n", "нет", "no_show"})
_INT_RE = re.compile(r"[+-]?\d+(?:\.0*)?", re.ASCII)  # ASCII digits only: '٥' is not 5


def is_blank(v: Any) -> bool:
    """None, or a string of whitespace only."""
    return v is None or (isinstance(v, str) and not v.strip())


def as_int(v: Any, field_name: str, *, lo: int | None = INT32_MIN, hi: int | None = INT32_MAX) -> int | None:
    """An integer (``7``, ``"7"``, ``7.0``, ``"7.0"``) within [lo, hi] (PostgreSQL ``integer`` by default);
    None for a blank value. Fractions, booleans, text and out-of-range values are errors."""
    if is_blank(v):
        return None
    if isinstance(v, bool):
        raise FieldError(field_name, f"must be an integer, got {v!r}")
    if isinstance(v, float):
        if not math.isfinite(v) or not v.is_integer():
            raise FieldError(field_name, f"must be an integer, got {v!r}")
        n = int(v)
    elif isinstance(v, int):
        n = v
    elif isinstance(v, str) and _INT_RE.fullmatch(v.strip()):
        try:
            n = int(Decimal(v.strip()))
        except InvalidOperation:  # pragma: no cover - the regex admits only integers
            raise FieldError(field_name, f"must be an integer, got {v!r}") from None
    else:
        shown = v if isinstance(v, str) and len(v) <= 40 else (v[:40] + "…" if isinstance(v, str) else type(v).__name__)
        raise FieldError(field_name, f"must be an integer, got {shown!r}")
    if (lo is not None and n < lo) or (hi is not None and n > hi):
        rng = f"between {lo} and {hi}" if lo is not None and hi is not None else (f">= {lo}" if lo is not None else f"<= {hi}")
        raise FieldError(field_name, f"must be an integer {rng}, got {n}")
    return n


def as_bool(v: Any, field_name: str) -> bool | None:
    """``true/false``, ``1/0``, ``yes/no``, ``да/нет`` (any case); None for a blank value."""
    if is_blank(v):
        return None
    if isinstance(v, bool):
        return v
    if isinstance(v, int) and v in (0, 1):
        return bool(v)
    if isinstance(v, str):
        s = v.strip().lower()
        if s in TRUE_WORDS:
            return True
        if s in FALSE_WORDS:
            return False
    raise FieldError(field_name, f"must be true or false, got {v!r}")


def as_text(v: Any, field_name: str, *, required: bool = False, allow_blank: bool = True) -> str | None:
    """A string, returned unchanged (never stripped); None when absent. Numbers and objects are errors."""
    if v is None:
        if required:
            raise FieldError(field_name, "is required")
        return None
    if not isinstance(v, str):
        raise FieldError(field_name, f"must be a string, got {_json_type(v)}")
    if not allow_blank and not v.strip():
        raise FieldError(field_name, "must not be empty")
    return v


def as_datetime(v: Any, field_name: str) -> datetime | None:
    """An ISO 8601 date-time (``2025-09-01T10:00:00+05:00``, ``Z`` accepted; naive = UTC); None when blank."""
    if is_blank(v):
        return None
    if not isinstance(v, str):
        raise FieldError(field_name, f"must be an ISO date-time string, got {_json_type(v)}")
    s = v.strip()
    if s.endswith(("Z", "z")):
        s = s[:-1] + "+00:00"
    try:
        ts = datetime.fromisoformat(s)
    except ValueError:
        raise FieldError(field_name, f"must be an ISO date-time (2025-09-01T10:00:00+05:00), got {v!r}") from None
    return ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)


def as_json_value(v: Any, field_name: str) -> Any:
    """A value that may be given as JSON text in a CSV cell (``[1, 2]``, ``{"a": 1}``): parsed; other values as is."""
    if isinstance(v, str) and v.strip()[:1] in ("[", "{"):
        try:
            return _DECODER.decode(v.strip())
        except json.JSONDecodeError as exc:
            raise FieldError(field_name, f"invalid JSON in the cell: {exc.msg} (column {exc.colno})") from None
        except _DuplicateKey as exc:
            raise FieldError(field_name, f"invalid JSON in the cell: key {exc.key!r} appears twice") from None
        except ValueError as exc:
            raise FieldError(field_name, f"invalid JSON in the cell: {exc}") from None
    return v

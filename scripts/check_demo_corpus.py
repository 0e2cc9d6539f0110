#!/usr/bin/env python3
"""Validate the shipped demo corpus in ``data/`` and print a summary.

Checks (standard library only):

* ``knowledge_base.json`` -- a JSON array of chunks ``{id, url, title, source_type, text}``: types,
  ids unique and contiguous from 1, chunks of one page contiguous, one title and source type per page,
  non-empty texts, minimum numbers of chunks, pages and chunks per page;
* ``golden_dataset.json`` -- a JSON array in the seed's golden format: ids unique, question types known,
  ``chunk_id`` present in the knowledge base, ``chunk_text`` equal to that chunk's text, ``confluence_url``
  equal to its url, ``relevant_chunk_ids`` existing and containing ``chunk_id``, ``relevant_urls`` equal
  to the distinct urls of the relevant chunks in order of first appearance; unanswerable items carry
  ``null``/empty values;
* ``question_log.csv`` (if present) -- columns ``id,question,answer,confluence_url,score,user_id,
  created_at,stop_point``: integer unique ids, non-empty questions, score empty or 1..5, ISO timestamps,
  boolean stop points, urls of answered rows;
* ``judge_set.json`` (if present) -- ``{id, question, context, answer, label, rationale, kind}`` with
  ``label`` 0 or 1.

Exits 1 with a message naming the file, the row and the field on the first problem.

Usage::

    python3 scripts/check_demo_corpus.py [--data DIR] [--min-chunks 160] [--min-golden 130]
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import statistics
import sys
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

SOURCE_TYPES = {"news", "events", "employees", "structure", "contacts", "rss", "confluence", "other"}
QUESTION_TYPES = ("factual", "multi_chunk", "paraphrase", "slang", "unanswerable")
GOLDEN_FIELDS = (
    "id",
    "question",
    "ground_truth_answer",
    "chunk_id",
    "chunk_text",
    "confluence_url",
    "relevant_chunk_ids",
    "relevant_urls",
    "question_type",
)
LOG_COLUMNS = ["id", "question", "answer", "confluence_url", "score", "user_id", "created_at", "stop_point"]
JUDGE_FIELDS = ("id", "question", "context", "answer", "label", "rationale", "kind")
BOOL_VALUES = {"true", "false", "1", "0", "t", "f", ""}
URL_RE = re.compile(r"^https?://\S+$")


class CorpusError(Exception):
    """A problem in one file, row and field."""

    def __init__(self, file: str, row: int | str | None, field: str | None, message: str) -> None:
        where = file
        if row is not None:
            where += f", row {row}"
        if field is not None:
            where += f", field {field!r}"
        super().__init__(f"{where}: {message}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _load_json_array(path: Path) -> list[Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorpusError(path.name, None, None, f"cannot read JSON: {exc}") from exc
    if not isinstance(data, list):
        raise CorpusError(path.name, None, None, "top level must be a JSON array")
    return data


def _req_str(file: str, row: int, rec: dict[str, Any], field: str, *, allow_empty: bool = False) -> str:
    value = rec.get(field)
    if not isinstance(value, str):
        raise CorpusError(file, row, field, f"must be a string, got {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise CorpusError(file, row, field, "must not be empty")
    return value


def check_knowledge_base(
    path: Path, *, min_chunks: int, min_pages: int, min_per_page: int
) -> list[dict[str, Any]]:
    file = path.name
    kb = _load_json_array(path)
    seen_urls: list[str] = []
    page_meta: dict[str, tuple[str, str]] = {}
    for row, rec in enumerate(kb, 1):
        if not isinstance(rec, dict):
            raise CorpusError(file, row, None, "each chunk must be a JSON object")
        missing = [f for f in ("id", "url", "title", "source_type", "text") if f not in rec]
        if missing:
            raise CorpusError(file, row, missing[0], "missing field")
        if not _is_int(rec["id"]):
            raise CorpusError(file, row, "id", f"must be an integer, got {rec['id']!r}")
        if rec["id"] != row:
            raise CorpusError(
                file, row, "id", f"ids must be unique and contiguous from 1; expected {row}, got {rec['id']}"
            )
        url = _req_str(file, row, rec, "url")
        if not URL_RE.match(url):
            raise CorpusError(file, row, "url", f"not an http(s) URL: {url!r}")
        title = _req_str(file, row, rec, "title")
        source_type = _req_str(file, row, rec, "source_type")
        if source_type not in SOURCE_TYPES:
            raise CorpusError(file, row, "source_type", f"unknown source type {source_type!r}")
        _req_str(file, row, rec, "text")
        if url in page_meta:
            if seen_urls[-1] != url:
                raise CorpusError(file, row, "url", f"chunks of page {url} are not contiguous")
            if page_meta[url] != (title, source_type):
                raise CorpusError(
                    file, row, "title", f"title/source_type differ from earlier chunks of {url}"
                )
        else:
            page_meta[url] = (title, source_type)
        seen_urls.append(url)
    per_page = Counter(seen_urls)
    if len(kb) < min_chunks:
        raise CorpusError(file, None, None, f"{len(kb)} chunks, expected at least {min_chunks}")
    if len(per_page) < min_pages:
        raise CorpusError(file, None, None, f"{len(per_page)} pages, expected at least {min_pages}")
    small = [u for u, n in per_page.items() if n < min_per_page]
    if small:
        raise CorpusError(
            file, None, "url", f"page {small[0]} has {per_page[small[0]]} chunks, expected >= {min_per_page}"
        )
    return kb


def check_golden(path: Path, kb: list[dict[str, Any]], *, min_items: int) -> list[dict[str, Any]]:
    file = path.name
    items = _load_json_array(path)
    by_id = {c["id"]: c for c in kb}
    ids: set[str] = set()
    for row, rec in enumerate(items, 1):
        if not isinstance(rec, dict):
            raise CorpusError(file, row, None, "each item must be a JSON object")
        for field in GOLDEN_FIELDS:
            if field not in rec:
                raise CorpusError(file, row, field, "missing field")
        extra = sorted(set(rec) - set(GOLDEN_FIELDS))
        if extra:
            raise CorpusError(file, row, extra[0], "unexpected field")
        item_id = _req_str(file, row, rec, "id")
        if item_id in ids:
            raise CorpusError(file, row, "id", f"duplicate id {item_id!r}")
        ids.add(item_id)
        _req_str(file, row, rec, "question")
        _req_str(file, row, rec, "ground_truth_answer")
        qtype = _req_str(file, row, rec, "question_type")
        if qtype not in QUESTION_TYPES:
            raise CorpusError(file, row, "question_type", f"unknown question type {qtype!r}")
        rel_ids, rel_urls = rec["relevant_chunk_ids"], rec["relevant_urls"]
        if not isinstance(rel_ids, list) or not all(_is_int(i) for i in rel_ids):
            raise CorpusError(file, row, "relevant_chunk_ids", "must be a list of integers")
        if not isinstance(rel_urls, list) or not all(isinstance(u, str) for u in rel_urls):
            raise CorpusError(file, row, "relevant_urls", "must be a list of strings")
        if qtype == "unanswerable":
            if rec["chunk_id"] is not None:
                raise CorpusError(file, row, "chunk_id", "must be null for an unanswerable question")
            if rec["chunk_text"] != "":
                raise CorpusError(file, row, "chunk_text", "must be empty for an unanswerable question")
            if rec["confluence_url"] is not None:
                raise CorpusError(file, row, "confluence_url", "must be null for an unanswerable question")
            if rel_ids or rel_urls:
                raise CorpusError(
                    file, row, "relevant_chunk_ids", "must be empty for an unanswerable question"
                )
            continue
        chunk_id = rec["chunk_id"]
        if not _is_int(chunk_id):
            raise CorpusError(file, row, "chunk_id", f"must be an integer, got {chunk_id!r}")
        if chunk_id not in by_id:
            raise CorpusError(file, row, "chunk_id", f"chunk {chunk_id} is not in the knowledge base")
        chunk = by_id[chunk_id]
        if rec["chunk_text"] != chunk["text"]:
            raise CorpusError(file, row, "chunk_text", f"differs from the text of chunk {chunk_id}")
        if rec["confluence_url"] != chunk["url"]:
            raise CorpusError(file, row, "confluence_url", f"differs from the url of chunk {chunk_id}")
        if not rel_ids:
            raise CorpusError(file, row, "relevant_chunk_ids", "must not be empty for an answerable question")
        if len(set(rel_ids)) != len(rel_ids):
            raise CorpusError(file, row, "relevant_chunk_ids", "contains duplicates")
        unknown = [i for i in rel_ids if i not in by_id]
        if unknown:
            raise CorpusError(
                file, row, "relevant_chunk_ids", f"chunk {unknown[0]} is not in the knowledge base"
            )
        if chunk_id not in rel_ids:
            raise CorpusError(file, row, "relevant_chunk_ids", f"does not contain chunk_id {chunk_id}")
        expected_urls = list(dict.fromkeys(by_id[i]["url"] for i in rel_ids))
        if rel_urls != expected_urls:
            raise CorpusError(file, row, "relevant_urls", f"expected {expected_urls}, got {rel_urls}")
        if qtype == "multi_chunk" and len(rel_ids) < 2:
            raise CorpusError(
                file, row, "relevant_chunk_ids", "a multi_chunk question needs at least 2 chunks"
            )
    if len(items) < min_items:
        raise CorpusError(file, None, None, f"{len(items)} items, expected at least {min_items}")
    return items


def _parse_bool(value: str) -> bool:
    return value.strip().lower() in {"true", "1", "t"}


def check_question_log(path: Path, kb_urls: set[str]) -> dict[str, Any]:
    file = path.name
    try:
        with path.open(encoding="utf-8", newline="") as fh:
            reader = csv.DictReader(fh)
            header = reader.fieldnames or []
            rows = list(reader)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise CorpusError(file, None, None, f"cannot read CSV: {exc}") from exc
    if header != LOG_COLUMNS:
        raise CorpusError(file, 1, None, f"header must be {','.join(LOG_COLUMNS)}, got {','.join(header)}")
    ids: set[int] = set()
    stats: Counter[str] = Counter()
    users: set[int] = set()
    foreign_urls: Counter[str] = Counter()
    for n, r in enumerate(rows, 2):  # row numbers as in the file (header is row 1)
        if None in r or any(v is None for v in r.values()):
            raise CorpusError(file, n, None, "wrong number of columns")
        try:
            rid = int(r["id"])
        except ValueError as exc:
            raise CorpusError(file, n, "id", f"must be an integer, got {r['id']!r}") from exc
        if rid in ids:
            raise CorpusError(file, n, "id", f"duplicate id {rid}")
        ids.add(rid)
        if not r["question"].strip():
            raise CorpusError(file, n, "question", "must not be empty")
        answered = bool(r["answer"].strip())
        stats["answered" if answered else "unanswered"] += 1
        url = r["confluence_url"].strip()
        if url:
            if not URL_RE.match(url):
                raise CorpusError(file, n, "confluence_url", f"not an http(s) URL: {url!r}")
            if url not in kb_urls:
                foreign_urls[url] += 1
        if r["score"].strip():
            try:
                score = int(r["score"])
            except ValueError as exc:
                raise CorpusError(
                    file, n, "score", f"must be empty or an integer, got {r['score']!r}"
                ) from exc
            if not 1 <= score <= 5:
                raise CorpusError(file, n, "score", f"must be between 1 and 5, got {score}")
            stats[f"score={score}"] += 1
        if r["user_id"].strip():
            try:
                users.add(int(r["user_id"]))
            except ValueError as exc:
                raise CorpusError(
                    file, n, "user_id", f"must be empty or an integer, got {r['user_id']!r}"
                ) from exc
        if r["created_at"].strip():
            try:
                datetime.fromisoformat(r["created_at"].strip())
            except ValueError as exc:
                raise CorpusError(
                    file, n, "created_at", f"not an ISO timestamp: {r['created_at']!r}"
                ) from exc
        else:
            stats["no_created_at"] += 1
        if r["stop_point"].strip().lower() not in BOOL_VALUES:
            raise CorpusError(file, n, "stop_point", f"must be a boolean, got {r['stop_point']!r}")
        if _parse_bool(r["stop_point"]):
            stats["stop_points"] += 1
    return {"rows": len(rows), "users": len(users), "stats": stats, "foreign_urls": foreign_urls}


def check_judge_set(path: Path) -> list[dict[str, Any]]:
    file = path.name
    items = _load_json_array(path)
    ids: set[Any] = set()
    for row, rec in enumerate(items, 1):
        if not isinstance(rec, dict):
            raise CorpusError(file, row, None, "each item must be a JSON object")
        for field in JUDGE_FIELDS:
            if field not in rec:
                raise CorpusError(file, row, field, "missing field")
        item_id = rec["id"]
        if not (isinstance(item_id, str) and item_id.strip()) and not _is_int(item_id):
            raise CorpusError(file, row, "id", f"must be a non-empty string or an integer, got {item_id!r}")
        if item_id in ids:
            raise CorpusError(file, row, "id", f"duplicate id {item_id!r}")
        ids.add(item_id)
        _req_str(file, row, rec, "question")
        _req_str(file, row, rec, "context", allow_empty=True)
        _req_str(file, row, rec, "answer", allow_empty=True)
        _req_str(file, row, rec, "rationale")
        _req_str(file, row, rec, "kind")
        if not _is_int(rec["label"]) or rec["label"] not in (0, 1):
            raise CorpusError(file, row, "label", f"must be 0 or 1, got {rec['label']!r}")
    return items


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parent.parent / "data")
    parser.add_argument("--min-chunks", type=int, default=160)
    parser.add_argument("--min-pages", type=int, default=20)
    parser.add_argument("--min-chunks-per-page", type=int, default=4)
    parser.add_argument("--min-golden", type=int, default=130)
    args = parser.parse_args(argv)
    data: Path = args.data
    try:
        for name in ("knowledge_base.json", "golden_dataset.json"):
            if not (data / name).is_file():
                raise CorpusError(name, None, None, f"file not found in {data}")
        kb = check_knowledge_base(
            data / "knowledge_base.json",
            min_chunks=args.min_chunks,
            min_pages=args.min_pages,
            min_per_page=args.min_chunks_per_page,
        )
        golden = check_golden(data / "golden_dataset.json", kb, min_items=args.min_golden)
        log_summary = None
        if (data / "question_log.csv").is_file():
            log_summary = check_question_log(data / "question_log.csv", {c["url"] for c in kb})
        judge = check_judge_set(data / "judge_set.json") if (data / "judge_set.json").is_file() else None
    except CorpusError as exc:
        print(f"ERROR: {exc}", file=sys.stderr)
        return 1

    lengths = [len(c["text"]) for c in kb]
    pages = Counter(c["url"] for c in kb)
    print(f"knowledge_base.json: {len(kb)} chunks over {len(pages)} pages")
    print(
        f"  chunk length (characters): min {min(lengths)}, median {statistics.median(lengths):g}, "
        f"max {max(lengths)}; chunks per page: min {min(pages.values())}, max {max(pages.values())}"
    )
    print(
        "  source types: "
        + ", ".join(f"{k} {v}" for k, v in sorted(Counter(c["source_type"] for c in kb).items()))
    )
    qtypes = Counter(g["question_type"] for g in golden)
    print(f"golden_dataset.json: {len(golden)} items")
    print("  question types: " + ", ".join(f"{t} {qtypes.get(t, 0)}" for t in QUESTION_TYPES))
    covered = {g["confluence_url"] for g in golden if g["confluence_url"]}
    multi_page = sum(1 for g in golden if len(g["relevant_urls"]) > 1)
    print(
        f"  pages with a primary chunk: {len(covered)} of {len(pages)}; items with relevant chunks on >1 page: {multi_page}"
    )
    if log_summary is None:
        print("question_log.csv: not present (skipped)")
    else:
        st = log_summary["stats"]
        scores = ", ".join(f"{k} {v}" for k, v in sorted(st.items()) if k.startswith("score="))
        print(
            f"question_log.csv: {log_summary['rows']} rows, {log_summary['users']} users; answered {st['answered']}, "
            f"unanswered {st['unanswered']}; rated: {scores or 'none'}; stop points {st['stop_points']}; "
            f"without created_at {st['no_created_at']}"
        )
        if log_summary["foreign_urls"]:
            n = sum(log_summary["foreign_urls"].values())
            print(
                f"  note: {n} rows cite {len(log_summary['foreign_urls'])} urls that are not in the knowledge base"
            )
    if judge is None:
        print("judge_set.json: not present (skipped)")
    else:
        kinds = Counter(j["kind"] for j in judge)
        labels = Counter(j["label"] for j in judge)
        print(f"judge_set.json: {len(judge)} items; label 1: {labels.get(1, 0)}, label 0: {labels.get(0, 0)}")
        print("  kinds: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())

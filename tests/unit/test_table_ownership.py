"""One module owns each store table's SQL: every table of the ``eval`` schema is named here with its owner.

An AST scan of every string literal (f-string parts included) of the package, the pages and the app finds
SQL naming a table after FROM / INTO / UPDATE / JOIN / TABLE (upper case, as the project writes SQL: the
same words in prose — "embedded into eval.chunk_vectors" — are not statements); migrations create and
change the tables and are exempt. A statement on a table outside its owner is allowed only where
:data:`SHARED` gives the reason. The per-snapshot copies (``eval.snapshot_chunks_<id>``,
``eval.snapshot_log_<id>``, addressed as ``snap.chunks_table`` / ``snap.log_table``) are created and
written by :mod:`voproshalych_eval.db.snapshots` alone; reading them is what a snapshot is for.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from voproshalych_eval.config import PROJECT_ROOT

PACKAGE = PROJECT_ROOT / "voproshalych_eval"
MIGRATIONS = PACKAGE / "db" / "migrations"

#: every table of the store (``eval`` schema) and the module that owns its SQL
OWNERS: dict[str, str] = {
    "alert_channels": "engine/alerts.py",
    "alert_log": "engine/alerts.py",
    "alert_state": "engine/alerts.py",
    "answer_labels": "analytics/answer_labels.py",
    "audit_log": "db/audit.py",
    "baselines": "engine/baselines.py",
    "bot_profiles": "bot_api/profiles.py",
    "chunk_vectors": "db/retrieval.py",
    "dataset_items": "datasets/store.py",
    "dataset_reviews": "datasets/annotations.py",
    "dataset_versions": "datasets/store.py",
    "datasets": "datasets/store.py",
    "embedding_cache": "embeddings/cache.py",
    "gap_diagnoses": "analytics/gaps.py",
    "gap_drafts": "analytics/gaps.py",
    "gap_events": "analytics/gaps.py",
    "gap_numbers": "analytics/gaps.py",
    "gaps": "analytics/gaps.py",
    "human_labels": "db/labels.py",
    "judge_agreements": "db/labels.py",
    "judge_versions": "db/labels.py",
    "llm_cache": "llm/cache.py",
    "llm_calls": "llm/cache.py",
    "llm_prices": "llm/prices.py",
    "meta": "db/meta.py",
    "projections": "tiers/projection.py",
    "question_log": "analytics/question_log.py",
    "run_artifacts": "db/artifacts.py",
    "run_items": "engine/runs.py",
    "runs": "engine/runs.py",
    "sandboxes": "db/sandboxes.py",
    "schedules": "engine/schedules.py",
    "snapshot_chunks": "db/snapshots.py",
    "snapshot_log": "db/snapshots.py",
    "snapshots": "db/snapshots.py",
    "topic_names": "analytics/topic_memory.py",
}

#: ``(table, module)``: SQL on a table outside its owner, with the reason it stays there
SHARED: dict[tuple[str, str], str] = {
    ("dataset_reviews", "datasets/store.py"): (
        "delete_dataset removes a name's review state in the same transaction as its versions; annotations "
        "imports datasets, so datasets cannot call it"),
    ("dataset_versions", "datasets/versions.py"): (
        "the version history reader (one statement joining versions to their contents); the dataset modules "
        "are one store split into a reader/writer and an editor"),
    ("datasets", "datasets/versions.py"): "the same history statement (the join to the contents' hash and size)",
}

_SQL_VERB = r"\b(?:FROM|INTO|UPDATE|JOIN|TABLE)\s+"
_WRITE_VERB = (r"\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM|CREATE\s+TABLE|DROP\s+TABLE(?:\s+IF\s+EXISTS)?|ALTER\s+TABLE|"
               r"TRUNCATE)\s+")
_WRITE = re.compile(_WRITE_VERB + "$")
_COPY_WRITE = re.compile(_WRITE_VERB + r"eval\.snapshot_(?:chunks|log)_")


def _files() -> list[Path]:
    return [f for f in [*PACKAGE.rglob("*.py"), *(PROJECT_ROOT / "pages").glob("*.py"), PROJECT_ROOT / "app.py"]
            if MIGRATIONS not in f.parents]


def _rel(path: Path) -> str:
    return str(path.relative_to(PACKAGE)) if PACKAGE in path.parents else str(path.relative_to(PROJECT_ROOT))


def _pattern(table: str) -> re.Pattern[str]:
    return re.compile(_SQL_VERB + rf"eval\.{table}\b(?!_)")


@functools.cache
def _nodes(path: Path) -> tuple[ast.AST, ...]:
    return tuple(ast.walk(ast.parse(path.read_text(encoding="utf-8"))))


@functools.cache
def _strings(path: Path) -> tuple[tuple[int, str], ...]:
    return tuple((node.lineno, node.value) for node in _nodes(path)
                 if isinstance(node, ast.Constant) and isinstance(node.value, str))


def _sql_hits(path: Path, pattern: re.Pattern[str]) -> list[str]:
    return [f"{_rel(path)}:{line}" for line, value in _strings(path) if pattern.search(value)]


def _migration_tables() -> set[str]:
    found: set[str] = set()
    for f in (MIGRATIONS / "versions").glob("*.py"):
        src = f.read_text(encoding="utf-8")
        found |= set(re.findall(r"create_table\(\s*\"([a-z_]+)\"", src))
        found |= set(re.findall(r"CREATE TABLE (?:IF NOT EXISTS )?eval\.([a-z_]+?)(?:_\{|_%|\b)", src))
    return found


def test_every_table_of_the_store_has_an_owner() -> None:
    assert len(_migration_tables()) >= 30  # the scan reads the migrations
    missing = _migration_tables() - set(OWNERS)
    assert missing == set(), f"tables without an owner in OWNERS: {sorted(missing)}"
    assert all((PACKAGE / owner).is_file() for owner in OWNERS.values())


def test_each_table_is_queried_only_by_its_owner() -> None:
    files = _files()
    for table, owner in OWNERS.items():
        pattern = _pattern(table)
        offenders = [hit for f in files if _rel(f) != owner and (table, _rel(f)) not in SHARED
                     for hit in _sql_hits(f, pattern)]
        assert offenders == [], f"SQL on eval.{table} (owned by {owner}) elsewhere: {offenders}"


def test_owners_and_shared_entries_hold_statements() -> None:
    """The scan sees every named owner's statements (a stale entry is removed, not kept)."""
    per_copy = {"snapshot_chunks", "snapshot_log"}  # addressed through snap.chunks_table / snap.log_table
    for table, owner in OWNERS.items():
        if table not in per_copy:
            assert _sql_hits(PACKAGE / owner, _pattern(table)), f"{owner} holds no SQL on eval.{table}"
    for table, module in SHARED:
        assert _sql_hits(PACKAGE / module, _pattern(table)), f"stale SHARED entry ({table}, {module})"


def _copy_writes(path: Path) -> list[str]:
    """Statements writing a per-snapshot copy: ``eval.snapshot_chunks_<id>`` / ``eval.snapshot_log_<id>`` after
    INSERT INTO / UPDATE / DELETE FROM / CREATE / DROP / ALTER TABLE, or an f-string whose text before
    ``{x.chunks_table}`` / ``{x.log_table}`` ends with one of those."""
    out = [f"{_rel(path)}:{line}" for line, value in _strings(path) if _COPY_WRITE.search(value)]
    for node in _nodes(path):
        if not isinstance(node, ast.JoinedStr):
            continue
        before = ""
        for part in node.values:
            if isinstance(part, ast.Constant) and isinstance(part.value, str):
                before += part.value
            elif isinstance(part, ast.FormattedValue):
                v = part.value
                if isinstance(v, ast.Attribute) and v.attr in ("chunks_table", "log_table") and _WRITE.search(before):
                    out.append(f"{_rel(path)}:{node.lineno}")
                before = ""
    return out


def test_snapshot_copies_are_written_only_by_snapshots() -> None:
    offenders = [hit for f in _files() if _rel(f) != "db/snapshots.py" for hit in _copy_writes(f)]
    assert offenders == [], f"a per-snapshot copy written outside db/snapshots.py: {offenders}"
    assert _copy_writes(PACKAGE / "db" / "snapshots.py")  # the scan does see the owner's writes

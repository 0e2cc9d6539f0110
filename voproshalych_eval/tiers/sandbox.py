"""Sandboxes: a knowledge base edited the way a team would edit it, before anything is published.

A sandbox is a snapshot derived from another one (:func:`voproshalych_eval.db.snapshots.derive`) by edits:

* ``add`` a page (a draft article) from a text;
* ``replace`` a page's text;
* ``remove`` a page.

Added and replaced texts are chunked the way production chunks them — LangChain's
``RecursiveCharacterTextSplitter`` (``langchain-text-splitters``) with ``chunk_size`` 4096 and
``chunk_overlap`` 200 characters by default (both are settings) — and embedded with the embedder the
what-if searches with. When that embedder is the model of the parent's stored vectors, the new chunks'
``embedding`` column is filled with it (so the sandbox searches like its parent); with any other
embedder the column stays empty for the new chunks and searches use ``eval.chunk_vectors`` (re-embedded
by text, as for every non-stored embedder). The parent is never touched; deriving the same edits again
returns the same sandbox.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from voproshalych_eval.bilingual import text as bi
from voproshalych_eval.db import retrieval as R
from voproshalych_eval.db import sandboxes, snapshots
from voproshalych_eval.db.snapshots import Snapshot

DEFAULT_CHUNK_SIZE = 4096
DEFAULT_CHUNK_OVERLAP = 200
OPS = ("add", "replace", "remove")
#: URL scheme of pages added in a sandbox (a draft has no Confluence address yet)
DRAFT_SCHEME = "draft://"

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Edit:
    """One edit of the knowledge base: ``op`` (``add``, ``replace``, ``remove``), the page ``url``, the new
    ``text`` (add / replace) and where it came from (``source``: a file name, ``gap 3 draft v2`` …)."""

    op: str
    url: str
    text: str | None = None
    source: str | None = None

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"unknown edit {self.op!r}; use one of {', '.join(OPS)}")
        if not str(self.url or "").strip():
            raise ValueError(f"a {self.op} edit needs a page URL")
        if self.op != "remove" and not str(self.text or "").strip():
            raise ValueError(f"the new text of {self.url} ({self.source or 'no source'}) is empty")

    def describe(self, n_chunks: int | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"op": self.op, "url": self.url, "source": self.source}
        if self.text is not None:
            out["text_sha256"] = hashlib.sha256(self.text.encode("utf-8")).hexdigest()
            out["n_chars"] = len(self.text)
        if n_chunks is not None:
            out["n_chunks"] = n_chunks
        return out


def read_text_file(path: str | Path) -> str:
    """A UTF-8 text / Markdown file (an error names the file)."""
    p = Path(path)
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"{p}: no such file") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{p}: not UTF-8 text (byte {exc.start})") from None


def draft_url(name: str) -> str:
    """The URL an added page gets: ``draft://<name>``."""
    slug = "-".join(str(name).strip().split()) or "draft"
    return DRAFT_SCHEME + slug


def edits_from_args(adds: Sequence[str] = (), replaces: Sequence[str] = (), removes: Sequence[str] = ()) -> list[Edit]:
    """Edits from the CLI's ``--add FILE`` (or ``URL=FILE``), ``--replace-page URL=FILE``, ``--remove-page URL``."""
    out: list[Edit] = []
    for arg in adds:
        url, sep, file = str(arg).rpartition("=")
        if not sep or "://" not in url:
            url, file = draft_url(Path(arg).stem), str(arg)
        out.append(Edit("add", url, read_text_file(file), Path(file).name))
    for arg in replaces:
        url, sep, file = str(arg).rpartition("=")
        if not sep or not url:
            raise ValueError(f"--replace-page {arg!r}: expected URL=FILE")
        out.append(Edit("replace", url, read_text_file(file), Path(file).name))
    out += [Edit("remove", str(url)) for url in removes]
    return out


def splitter(*, chunk_size: int = DEFAULT_CHUNK_SIZE, chunk_overlap: int = DEFAULT_CHUNK_OVERLAP) -> Any:
    """Production's splitter: ``RecursiveCharacterTextSplitter(chunk_size, chunk_overlap)`` (LangChain)."""
    # heavy: defers langchain_text_splitters (+320 ms)
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    if int(chunk_size) < 1 or int(chunk_overlap) < 0 or int(chunk_overlap) >= int(chunk_size):
        raise ValueError(f"chunk size {chunk_size} / overlap {chunk_overlap}: need size >= 1 and 0 <= overlap < size")
    return RecursiveCharacterTextSplitter(chunk_size=int(chunk_size), chunk_overlap=int(chunk_overlap))


def split_text(text: str, *, chunk_size: int = DEFAULT_CHUNK_SIZE, chunk_overlap: int = DEFAULT_CHUNK_OVERLAP) -> list[str]:
    """``text`` chunked like production (empty pieces dropped)."""
    return [c for c in splitter(chunk_size=chunk_size, chunk_overlap=chunk_overlap).split_text(text) if c.strip()]


def _check_edits(edits: Sequence[Edit], urls: set[str]) -> None:
    seen: set[str] = set()
    for e in edits:
        if e.url in seen:
            raise ValueError(f"page {e.url} is edited twice; one edit per page")
        seen.add(e.url)
        if e.op in ("replace", "remove") and e.url not in urls:
            raise ValueError(f"--{e.op}-page {e.url}: the knowledge base has no such page "
                             "(voproshalych-eval snapshot pages lists them)")
        if e.op == "add" and e.url in urls:
            raise ValueError(f"--add {e.url}: the page already exists; use --replace-page {e.url}=FILE")


def create(
    engine: Engine,
    edits: Sequence[Edit],
    *,
    parent: int | Snapshot | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    chunk_overlap: int = DEFAULT_CHUNK_OVERLAP,
    embedder: str | None = None,
    progress: Progress | None = None,
) -> tuple[Snapshot, sandboxes.SandboxInfo]:
    """Derive a sandbox from ``parent`` (default: the current snapshot) by ``edits``; returns it and its origin."""
    # heavy: keeps embeddings out of `--help` (+1 ms)
    from voproshalych_eval.embeddings import cached_embedder

    # heavy: keeps tiers.tier1 out of `--help` (+3 ms)
    from voproshalych_eval.tiers.tier1 import default_embedder_name

    say = progress or (lambda _m: None)
    if not edits:
        raise ValueError("a sandbox needs at least one edit (--add, --replace-page or --remove-page)")
    base = snapshots.resolve(engine, parent)
    page_rows = {str(p["url"]): p for p in sandboxes.pages(engine, base)}
    _check_edits(edits, set(page_rows))
    emb_name = str(embedder or default_embedder_name(engine, snapshot=base))
    fill_stored = emb_name == R.stored_model_name(engine, snapshot=base)
    new_chunks: list[dict[str, Any]] = []
    described: list[dict[str, Any]] = []
    for e in edits:
        if e.op == "remove":
            described.append(e.describe())
            continue
        pieces = split_text(str(e.text), chunk_size=chunk_size, chunk_overlap=chunk_overlap)
        source_type = (page_rows.get(e.url) or {}).get("source_type") if e.op == "replace" else "confluence"
        new_chunks += [{"url": e.url, "text": t, "source_type": source_type} for t in pieces]
        described.append(e.describe(len(pieces)))
    if new_chunks and fill_stored:
        say(bi(f"Эмбеддинг {len(new_chunks)} новых чанков моделью {emb_name}…",
               f"Embedding {len(new_chunks)} new chunk(s) with {emb_name}…"))
        vecs = cached_embedder(emb_name, engine).encode_passages([c["text"] for c in new_chunks])
        for c, v in zip(new_chunks, vecs, strict=True):
            c["embedding"] = v
    label = f"sandbox of #{base.id}: " + ", ".join(
        {"add": "+", "replace": "~", "remove": "−"}[e.op] + e.url for e in edits)
    snap = snapshots.derive(engine, base, remove_urls=[e.url for e in edits if e.op in ("replace", "remove")],
                            add_chunks=new_chunks, label=label[:500])
    info = sandboxes.record(engine, snap.id, parent_id=base.id, edits=described, chunk_size=int(chunk_size),
                            chunk_overlap=int(chunk_overlap), embedder=emb_name)
    say(bi(f"Песочница {snap.label}" + (" (уже была)" if snap.reused else "") + f": {snap.n_chunks} чанков.",
           f"Sandbox {snap.label}" + (" (existing)" if snap.reused else "") + f": {snap.n_chunks} chunks."))
    return snap, info


def kb_pages(engine: Engine, snapshot: int | Snapshot | None = None) -> list[dict[str, Any]]:
    """The pages of a snapshot's knowledge base (``url``, ``n_chunks``, ``n_chars``, ``source_type``)."""
    return sandboxes.pages(engine, snapshot)


def page_text(engine: Engine, url: str, snapshot: int | Snapshot | None = None) -> str:
    """A page's text (its chunks joined by blank lines), the starting point of a replacement."""
    return sandboxes.page_text(engine, url, snapshot)

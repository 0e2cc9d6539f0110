"""The sampling plan of a synthetic golden set: which chunks, of which pages, get which question type.

Pure and deterministic (a seed): :func:`plan_slots` turns the knowledge base's chunks, a target size
and a type mix into *slots* — one question to write each, with its type, source chunk(s) and a
``focus`` (how many earlier slots used the same chunk, so the prompt can point at another part of it).

Strategies (over pages = distinct URLs, after the optional ``pages`` / ``source_types`` filters):

* ``uniform`` (default) — every page gets ``size // P`` or ``size // P + 1`` slots (pages in a seeded
  order take the remainder), so every page gets questions whenever ``size >= P``;
* ``proportional`` — pages get slots in proportion to their number of chunks (largest remainder).

Types: the counts per type are the largest-remainder rounding of ``size * weight / sum(weights)``; the
types are laid over the slots in a smooth round robin, and slots are ordered page-interleaved (the
first P slots touch P different pages), so every prefix of the plan covers pages and types evenly. A
page takes an ``unanswerable`` slot only if at least two of its slots (core and spare) stay answerable
— else the slot goes to the next page, and only leftovers are placed regardless — so every page gets
questions with a relevant chunk, and a second one to spare, where the size allows.
Within a page the chunks are used in turn (seeded starting point). ``multi_chunk`` takes a second chunk
of the same page, or of the most related page (``related``) when the page has one chunk; with no related
page the slot is planned as ``factual`` (counted in the ``no_second_chunk`` warning), never paired
with an arbitrary page. ``unanswerable``
uses its chunk only as the topic (relevant lists stay empty).

``oversample`` adds spare slots (``ceil(size * oversample)``), planned the same way (but given first
to the pages with the fewest core slots) and marked ``spare``; the generator keeps at most ``size``
items, preferring non-spare ones.
"""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

QUESTION_TYPES = ("factual", "paraphrase", "multi_chunk", "conditional", "unanswerable", "follow_up")
STRATEGIES = ("uniform", "proportional")


@dataclass(frozen=True)
class ChunkInfo:
    """What the sampler needs of a chunk."""

    id: int
    url: str
    source_type: str | None = None


@dataclass(frozen=True)
class Slot:
    """One question to generate."""

    key: str
    index: int
    question_type: str
    chunk_ids: tuple[int, ...]
    urls: tuple[str, ...]
    focus: int = 0
    spare: bool = False

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["chunk_ids"] = list(self.chunk_ids)
        d["urls"] = list(self.urls)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Slot:
        return cls(
            key=str(d["key"]), index=int(d["index"]), question_type=str(d["question_type"]),
            chunk_ids=tuple(int(x) for x in d["chunk_ids"]), urls=tuple(str(x) for x in d["urls"]),
            focus=int(d.get("focus", 0)), spare=bool(d.get("spare", False)),
        )


@dataclass
class SamplingPlan:
    slots: list[Slot]
    pages_total: int
    pages_planned: int
    by_type: dict[str, int]
    #: ``{"code", "message", ...}``: what the plan could not do (``size_below_pages``, ``no_second_chunk``)
    warnings: list[dict[str, Any]] = field(default_factory=list)


def largest_remainder(total: int, weights: Mapping[str, float] | Sequence[float]) -> list[int]:
    """Integer counts summing to ``total``, proportional to ``weights`` (Hamilton's method; ties by order)."""
    w = list(weights.values()) if isinstance(weights, Mapping) else list(weights)
    if total < 0:
        raise ValueError("total must be >= 0")
    if not w or any(x < 0 for x in w) or sum(w) <= 0:
        raise ValueError("weights must be non-negative with a positive sum")
    s = float(sum(w))
    exact = [total * x / s for x in w]
    counts = [int(math.floor(e)) for e in exact]
    rest = total - sum(counts)
    order = sorted(range(len(w)), key=lambda i: (-(exact[i] - counts[i]), i))
    for i in order[:rest]:
        counts[i] += 1
    return counts


def parse_type_mix(types: str | Sequence[str] | Mapping[str, float] | None) -> dict[str, float]:
    """``"factual,paraphrase"`` / ``"factual:2,unanswerable:1"`` / a list / a mapping -> ``{type: weight}``.

    None gives every type with weight 1. Unknown types raise ``ValueError``.
    """
    if types is None or types == "" or types == []:
        return dict.fromkeys(QUESTION_TYPES, 1.0)
    if isinstance(types, Mapping):
        mix = {str(k): float(v) for k, v in types.items()}
    else:
        parts = types.split(",") if isinstance(types, str) else list(types)
        mix = {}
        for p in parts:
            p = str(p).strip()
            if not p:
                continue
            name, _, w = p.partition(":")
            try:
                mix[name.strip()] = mix.get(name.strip(), 0.0) + (float(w) if w.strip() else 1.0)
            except ValueError:
                raise ValueError(f"bad weight in {p!r}; use type or type:weight") from None
    unknown = sorted(set(mix) - set(QUESTION_TYPES))
    if unknown:
        raise ValueError(f"unknown question type(s) {', '.join(unknown)}; choose from {', '.join(QUESTION_TYPES)}")
    if not mix or sum(mix.values()) <= 0 or any(v < 0 for v in mix.values()):
        raise ValueError("the type mix needs at least one type with a positive weight")
    return {k: v for k, v in mix.items() if v > 0}


def _smooth_round_robin(counts: Mapping[str, int]) -> list[str]:
    """A sequence with each type ``counts[t]`` times, spread evenly (nginx's smooth weighted round robin)."""
    total = sum(counts.values())
    current = dict.fromkeys(counts, 0)
    out: list[str] = []
    for _ in range(total):
        for t, c in counts.items():
            current[t] += c
        best = max(counts, key=lambda t: (current[t], -list(counts).index(t)))
        out.append(best)
        current[best] -= total
    return out


def _page_counts(pages: list[str], n_chunks: Mapping[str, int], n: int, strategy: str) -> dict[str, int]:
    if strategy == "uniform":
        counts = largest_remainder(n, [1.0] * len(pages))
    elif strategy == "proportional":
        counts = largest_remainder(n, [float(n_chunks[p]) for p in pages])
    else:
        raise ValueError(f"unknown strategy {strategy!r}; use {' or '.join(STRATEGIES)}")
    return dict(zip(pages, counts, strict=True))


def plan_slots(
    chunks: Sequence[ChunkInfo],
    *,
    size: int,
    types: str | Sequence[str] | Mapping[str, float] | None = None,
    strategy: str = "uniform",
    pages: Sequence[str] | None = None,
    source_types: Sequence[str] | None = None,
    oversample: float = 0.0,
    seed: int = 0,
    related: Mapping[str, Sequence[str]] | None = None,
) -> SamplingPlan:
    """The slots of a generation run (see the module docstring)."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"size must be a positive integer, got {size!r}")
    if oversample < 0:
        raise ValueError("oversample must be >= 0")
    mix = parse_type_mix(types)
    pool = list(chunks)
    if pages:
        wanted = {str(p) for p in pages}
        unknown = sorted(wanted - {c.url for c in pool})
        if unknown:
            raise ValueError(f"page(s) not in the knowledge base: {', '.join(unknown[:5])}")
        pool = [c for c in pool if c.url in wanted]
    if source_types:
        st = {str(s) for s in source_types}
        pool = [c for c in pool if (c.source_type or "") in st]
    if not pool:
        raise ValueError("no chunk matches the chosen pages / source types")
    rng = random.Random(seed)
    by_page: dict[str, list[int]] = {}
    for c in sorted(pool, key=lambda c: c.id):
        by_page.setdefault(c.url, []).append(c.id)
    page_order = sorted(by_page)
    rng.shuffle(page_order)
    n_chunks = {p: len(v) for p, v in by_page.items()}
    warnings: list[dict[str, Any]] = []
    if strategy == "uniform" and size < len(page_order):
        warnings.append({"code": "size_below_pages", "size": size, "pages": len(page_order),
                         "message": f"size {size} < {len(page_order)} pages: not every page can get a question"})

    n_spare = int(math.ceil(size * oversample)) if oversample else 0
    start = {p: rng.randrange(len(v)) for p, v in by_page.items()}
    used: dict[int, int] = {}
    cursor = dict(start)
    slots: list[Slot] = []

    def take(page: str) -> int:
        ids = by_page[page]
        cid = ids[cursor[page] % len(ids)]
        cursor[page] += 1
        return cid

    def second_chunk(page: str, first: int) -> tuple[int, str] | None:
        ids = [i for i in by_page[page] if i != first]
        if ids:
            cid = ids[(cursor[page]) % len(ids)]
            cursor[page] += 1
            return cid, page
        for other in (related or {}).get(page, []):
            if other in by_page and other != page:
                return take(other), other
        return None  # no related page known: an arbitrary page would make a question of two unrelated chunks

    pc_core = _page_counts(page_order, n_chunks, size, strategy)
    # spares go first to the pages that got the fewest core slots (stable within the seeded order)
    spare_order = sorted(page_order, key=lambda pg: pc_core[pg])
    pc_spare = _page_counts(spare_order, n_chunks, n_spare, strategy) if n_spare else dict.fromkeys(page_order, 0)
    total = {pg: pc_core[pg] + pc_spare[pg] for pg in page_order}
    unanswerable: dict[str, int] = dict.fromkeys(page_order, 0)
    as_factual: list[int] = []  # multi_chunk slots without a second chunk (1-based slot numbers)

    def needs_answerable(page: str) -> bool:
        """A page takes an unanswerable slot only if at least two of its slots stay answerable."""
        return total[page] - unanswerable[page] - 1 < 2

    for part, n, part_order, pc in (("core", size, page_order, pc_core), ("spare", n_spare, spare_order, pc_spare)):
        if n == 0:
            continue
        type_counts = dict(zip(mix, largest_remainder(n, mix), strict=True))
        seq = deque(_smooth_round_robin({t: c for t, c in type_counts.items() if c > 0}))
        # page-interleaved order: round r visits every page that still has slots
        order: list[str] = []
        left = dict(pc)
        while any(left.values()):
            for p in part_order:
                if left[p] > 0:
                    order.append(p)
                    left[p] -= 1
        for page in order:
            deferred: list[str] = []
            qtype = None
            while seq:
                cand = seq.popleft()
                if cand == "unanswerable" and needs_answerable(page):
                    deferred.append(cand)
                    continue
                qtype = cand
                break
            if qtype is None:  # only unanswerable slots are left
                qtype = deferred.pop(0)
            seq.extendleft(reversed(deferred))
            idx = len(slots)
            first = take(page)
            ids, urls = [first], [page]
            if qtype == "multi_chunk":
                sec = second_chunk(page, first)
                if sec is None:
                    as_factual.append(idx + 1)
                    qtype = "factual"
                else:
                    ids.append(sec[0])
                    urls.append(sec[1])
            if qtype == "unanswerable":
                unanswerable[page] += 1
            focus = used.get(first, 0)
            used[first] = focus + 1
            slots.append(Slot(f"s{idx + 1:04d}", idx, qtype, tuple(ids), tuple(urls), focus, part == "spare"))
    by_type: dict[str, int] = {}
    for s in slots:
        if not s.spare:
            by_type[s.question_type] = by_type.get(s.question_type, 0) + 1
    planned = len({s.urls[0] for s in slots if not s.spare})
    if as_factual:
        warnings.append({"code": "no_second_chunk", "n": len(as_factual), "slots": as_factual,
                         "message": f"{len(as_factual)} multi_chunk slot(s) planned as factual: a single-chunk page with "
                                    "no related page (no stored vectors) has no second chunk"})
    return SamplingPlan(slots, len(by_page), planned, by_type, warnings)

"""Sampling plan of synthetic golden sets: page coverage, type mix, determinism, multi-chunk pairs."""

from __future__ import annotations

from collections import Counter

import pytest

from voproshalych_eval.generation.sampling import (
    QUESTION_TYPES,
    ChunkInfo,
    Slot,
    largest_remainder,
    parse_type_mix,
    plan_slots,
)


def _kb(pages: dict[str, int], *, source: str | None = None) -> list[ChunkInfo]:
    out, i = [], 0
    for url, n in pages.items():
        for _ in range(n):
            i += 1
            out.append(ChunkInfo(i, url, source))
    return out


def test_largest_remainder_hand_computed() -> None:
    assert largest_remainder(10, [1, 1, 1]) == [4, 3, 3]  # 3.33 each: the first takes the remainder
    assert largest_remainder(7, [2, 1]) == [5, 2]  # 4.67 / 2.33 -> floors 4, 2; the larger remainder (0.67) gets +1
    assert largest_remainder(0, [1, 2]) == [0, 0]
    assert sum(largest_remainder(101, [0.1, 0.7, 0.2])) == 101
    with pytest.raises(ValueError):
        largest_remainder(5, [0, 0])


def test_parse_type_mix() -> None:
    assert parse_type_mix(None) == dict.fromkeys(QUESTION_TYPES, 1.0)
    assert parse_type_mix("factual,unanswerable") == {"factual": 1.0, "unanswerable": 1.0}
    assert parse_type_mix("factual:3, paraphrase:1") == {"factual": 3.0, "paraphrase": 1.0}
    assert parse_type_mix({"follow_up": 2}) == {"follow_up": 2.0}
    with pytest.raises(ValueError, match="unknown question type"):
        parse_type_mix("factual,trivia")
    with pytest.raises(ValueError, match="bad weight"):
        parse_type_mix("factual:x")


def test_uniform_covers_every_page_with_requested_mix() -> None:
    kb = _kb({f"https://w/p{i}": (i % 4) + 1 for i in range(20)})
    plan = plan_slots(kb, size=60, types="factual,paraphrase,unanswerable", seed=3)
    assert len(plan.slots) == 60
    per_page = Counter(s.urls[0] for s in plan.slots)
    assert len(per_page) == 20 and set(per_page.values()) == {3}
    assert Counter(s.question_type for s in plan.slots) == {"factual": 20, "paraphrase": 20, "unanswerable": 20}
    # page-interleaved: the first 20 slots touch 20 different pages
    assert len({s.urls[0] for s in plan.slots[:20]}) == 20
    # unanswerable slots never leave a page with fewer than two answerable ones
    answerable = Counter(s.urls[0] for s in plan.slots if s.question_type != "unanswerable")
    assert len(answerable) == 20 and min(answerable.values()) == 2
    assert plan.pages_total == 20 and plan.pages_planned == 20
    # within a page the chunks are used in turn: a 3-chunk page gets 3 different chunks
    three = [u for u, n in Counter(c.url for c in kb).items() if n == 3][0]
    assert len({s.chunk_ids[0] for s in plan.slots if s.urls[0] == three}) == 3


def test_proportional_follows_chunk_counts() -> None:
    kb = _kb({"a": 6, "b": 3, "c": 1})
    plan = plan_slots(kb, size=20, strategy="proportional", types="factual")
    assert Counter(s.urls[0] for s in plan.slots) == {"a": 12, "b": 6, "c": 2}


def test_deterministic_by_seed() -> None:
    kb = _kb({f"p{i}": 3 for i in range(7)})
    a = plan_slots(kb, size=30, seed=11)
    b = plan_slots(kb, size=30, seed=11)
    c = plan_slots(kb, size=30, seed=12)
    assert [s.to_dict() for s in a.slots] == [s.to_dict() for s in b.slots]
    assert [s.to_dict() for s in a.slots] != [s.to_dict() for s in c.slots]
    assert all(Slot.from_dict(s.to_dict()) == s for s in a.slots)


def test_multi_chunk_pairs_same_page_else_related() -> None:
    kb = _kb({"big": 3, "single": 1, "other": 2})
    plan = plan_slots(kb, size=12, types="multi_chunk", related={"single": ["other", "big"]})
    for s in plan.slots:
        assert s.question_type == "multi_chunk" and len(s.chunk_ids) == 2 and s.chunk_ids[0] != s.chunk_ids[1]
        if s.urls[0] == "single":
            assert s.urls[1] == "other"  # the most related page
        else:
            assert s.urls[0] == s.urls[1]


def test_filters_spares_and_errors() -> None:
    kb = _kb({"a": 2}, source="news") + [ChunkInfo(10, "b", "confluence"), ChunkInfo(11, "c", "confluence")]
    plan = plan_slots(kb, size=4, source_types=["confluence"], types="factual")
    assert {s.urls[0] for s in plan.slots} == {"b", "c"}
    plan = plan_slots(kb, size=4, pages=["a"], oversample=0.5, types="factual")
    assert sum(s.spare for s in plan.slots) == 2 and len(plan.slots) == 6
    assert plan.by_type == {"factual": 4}  # spares are not part of the requested mix
    assert [s.key for s in plan.slots] == [f"s{i:04d}" for i in range(1, 7)]
    with pytest.raises(ValueError, match="not in the knowledge base"):
        plan_slots(kb, size=2, pages=["zzz"])
    with pytest.raises(ValueError, match="no chunk matches"):
        plan_slots(kb, size=2, source_types=["rss"])
    with pytest.raises(ValueError, match="positive integer"):
        plan_slots(kb, size=0)
    few = plan_slots(_kb({f"p{i}": 1 for i in range(5)}), size=3)
    assert few.warnings and few.pages_planned == 3


def test_spares_go_to_pages_with_fewest_core_slots() -> None:
    kb = _kb({f"p{i:02d}": 2 for i in range(10)})
    plan = plan_slots(kb, size=15, oversample=1 / 3, types="factual", seed=1)  # 15 core (5 pages get 2), 5 spares
    core = Counter(s.urls[0] for s in plan.slots if not s.spare)
    spare = Counter(s.urls[0] for s in plan.slots if s.spare)
    assert sum(spare.values()) == 5
    assert all(core[p] == 1 for p in spare)  # spares only where the core gave one slot


def test_multi_chunk_without_a_related_page_is_planned_factual_and_counted() -> None:
    kb = _kb({"big": 3, "single": 1, "lone": 1})
    plan = plan_slots(kb, size=9, types="multi_chunk", related={"single": ["big"]})  # no related page for "lone"
    lone = [s for s in plan.slots if s.urls[0] == "lone"]
    assert lone and all(s.question_type == "factual" and s.chunk_ids == (5,) and s.urls == ("lone",) for s in lone)
    assert all(len(s.chunk_ids) == 2 for s in plan.slots if s.urls[0] != "lone")
    assert plan.by_type == {"multi_chunk": 9 - len(lone), "factual": len(lone)}
    warn = [w for w in plan.warnings if w["code"] == "no_second_chunk"]
    assert len(warn) == 1 and warn[0]["n"] == len(lone) and warn[0]["slots"] == [s.index + 1 for s in lone]
    # with no related pages at all (no stored vectors), only same-page pairs are made
    bare = plan_slots(kb, size=9, types="multi_chunk")
    assert {s.urls[0] for s in bare.slots if s.question_type == "factual"} == {"single", "lone"}
    assert all(s.urls[0] == s.urls[1] for s in bare.slots if s.question_type == "multi_chunk")

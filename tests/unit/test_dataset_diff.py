"""Diff between two dataset versions (pure)."""

from __future__ import annotations

from voproshalych_eval.datasets.versions import diff_frame, diff_records


def test_diff_records_added_removed_changed() -> None:
    old = [
        {"id": "a", "question": "Q1", "relevant_chunk_ids": [1]},
        {"id": "b", "question": "Q2", "relevant_chunk_ids": [2]},
    ]
    new = [
        {"id": "b", "question": "Q2 edited", "relevant_chunk_ids": [2, 3], "note": "x"},
        {"id": "c", "question": "Q3", "relevant_chunk_ids": []},
    ]
    d = diff_records(old, new)
    assert d.added == ["c"] and d.removed == ["a"]
    assert len(d.changed) == 1 and d.changed[0].key == "b"
    assert list(d.changed[0].fields) == ["question", "relevant_chunk_ids", "note"]  # golden fields first
    assert d.changed[0].fields["relevant_chunk_ids"] == ([2], [2, 3])
    assert d.summary() == {"added": ["c"], "removed": ["a"],
                           "changed": [{"key": "b", "fields": ["note", "question", "relevant_chunk_ids"]}]}
    df = diff_frame(d)
    assert list(df.columns) == ["item_key", "change", "field", "old", "new"]
    assert len(df) == 5  # 1 added + 1 removed + 3 changed fields
    assert df[df["field"] == "relevant_chunk_ids"]["new"].iloc[0] == "[2, 3]"
    assert diff_records(old, old).is_empty and d.old_hash != d.new_hash


def test_diff_by_position_when_no_ids() -> None:
    d = diff_records([{"question": "x"}], [{"question": "y"}, {"question": "z"}])
    assert d.added == ["row2"] and [c.key for c in d.changed] == ["row1"]

"""Matching remembered topic names to a new clustering by centroid (no database)."""

from __future__ import annotations

import numpy as np

from voproshalych_eval.analytics.topic_memory import StoredName, TopicMemory


def test_apply_renames_and_merges_by_centroid() -> None:
    rng = np.random.default_rng(0)
    centers = np.eye(4, 16) * 5
    X = np.vstack([c + 0.1 * rng.normal(size=(10, 16)) for c in centers])
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    labels = np.repeat([0, 1, 2, 3], 10)
    stored = [StoredName(1, "m", np.eye(4, 16)[2], "общежитие", "g1"),
              StoredName(2, "m", np.eye(4, 16)[0], "стипендии", "g2"),
              StoredName(3, "m", np.eye(4, 16)[3], "стипендии", "g2"),
              StoredName(4, "m", -np.eye(4, 16)[1], "далеко", "g3")]  # matches nothing
    new, info = TopicMemory(stored, threshold=0.9).apply(labels, X)
    assert len(set(new.tolist())) == 3
    assert (new[labels == 0] == new[labels == 3][0]).all()  # merged group g2
    assert info[int(new[0])]["name"] == "стипендии" and info[int(new[0])]["merged"] == 2
    assert info[int(new[20])]["name"] == "общежитие" and info[int(new[20])]["stored_ids"] == [1]
    assert int(new[10]) not in info  # unmatched topic keeps its keyword name
    assert sorted(set(new.tolist())) == [0, 1, 2]


def test_threshold_one_to_one_and_other_dimensions() -> None:
    X = np.vstack([np.eye(2, 8)[0]] * 3 + [np.eye(2, 8)[1]] * 3)
    labels = np.repeat([0, 1], 3)
    near = np.eye(2, 8)[0] + 0.2 * np.eye(2, 8)[1]  # cos ≈ 0.98 with topic 0, 0.2 with topic 1
    stored = [StoredName(1, "m", near, "a", "g1"), StoredName(2, "m", np.eye(2, 8)[0], "b", "g2")]
    new, info = TopicMemory(stored, threshold=0.9).apply(labels, X)
    assert info[0]["name"] == "b" and 1 not in info  # the closer stored centroid wins; one name per topic
    assert TopicMemory(stored, threshold=0.999).apply(labels, X)[1][0]["name"] == "b"
    assert TopicMemory([StoredName(1, "m", np.ones(4), "x", "g")]).apply(labels, X)[1] == {}  # other dim

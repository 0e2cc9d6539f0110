"""Topic names a person gave — renames and merges — kept in the store for later runs, matched by centroid.

KMeans numbers its topics anew on every run, so a name cannot be tied to a topic id. Instead every name
is stored with the **centroid** of the topic it was given to (``eval.topic_names``, one embedding model per
row). On a later run, :meth:`TopicMemory.apply` computes the centroid (unit mean of its questions' unit
vectors) of every new topic and matches it to the stored centroids of the same model: a topic takes the
name of the stored centroid with the highest cosine similarity when that similarity is at least
``threshold`` (default 0.9), each stored centroid naming at most one topic (greedy, most similar pairs
first). Stored rows that share a ``group_key`` are one merged topic: all new topics matched to members of
one group become one topic with the group's name.

* rename: :func:`remember` one centroid under a new name (or :func:`rename_group` when the topic already
  came from stored rows);
* merge: :func:`remember` the centroids of all merged topics under one name and one new group;
* :func:`forget` deletes rows.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import Engine, text

DEFAULT_THRESHOLD = 0.9


@dataclass(frozen=True)
class StoredName:
    id: int
    model: str
    centroid: np.ndarray
    name: str
    group_key: str


def _unit(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.where(n > 0, n, 1.0)


def _vec(v: np.ndarray) -> str:
    return "[" + ",".join(f"{float(x):.7g}" for x in np.asarray(v).ravel()) + "]"


def list_names(engine: Engine, model: str | None = None) -> list[StoredName]:
    """Stored names (all models, or one)."""
    sql = "SELECT id, model, centroid::text AS c, name, group_key FROM eval.topic_names"
    params: dict[str, Any] = {}
    if model is not None:
        sql += " WHERE model = :m"
        params["m"] = model
    with engine.connect() as conn:
        rows = conn.execute(text(sql + " ORDER BY id"), params).all()
    return [StoredName(int(r.id), r.model, np.asarray([float(x) for x in r.c.strip("[]").split(",")]), r.name,
                       r.group_key) for r in rows]


def remember(engine: Engine, model: str, centroids: Sequence[np.ndarray], name: str, *,
             replace_ids: Sequence[int] = (), source: str | None = None) -> str:
    """Store ``centroids`` under ``name`` as one topic (one new group; several centroids = a merge) and delete
    the rows ``replace_ids`` (the stored rows the merged/renamed topics came from). Returns the group key."""
    name = " ".join(str(name).split())
    if not name:
        raise ValueError("a topic name must not be empty")
    if not len(centroids):
        raise ValueError("nothing to remember: no centroid")
    group = uuid.uuid4().hex
    with engine.begin() as conn:
        if replace_ids:
            conn.execute(text("DELETE FROM eval.topic_names WHERE id = ANY(:ids)"), {"ids": [int(i) for i in replace_ids]})
        for c in centroids:
            c = _unit(np.asarray(c, dtype=np.float64).ravel())
            conn.execute(
                text("INSERT INTO eval.topic_names(model, dim, centroid, name, group_key, source) "
                     "VALUES (:m, :d, CAST(:c AS vector), :n, :g, :s)"),
                {"m": model, "d": int(c.shape[0]), "c": _vec(c), "n": name, "g": group, "s": source},
            )
    return group


def rename_group(engine: Engine, ids: Sequence[int], name: str) -> int:
    """Give the stored rows ``ids`` (and every row of their groups) a new name; returns rows updated."""
    name = " ".join(str(name).split())
    if not name:
        raise ValueError("a topic name must not be empty")
    with engine.begin() as conn:
        res = conn.execute(
            text("UPDATE eval.topic_names SET name = :n, updated_at = now() WHERE group_key IN "
                 "(SELECT group_key FROM eval.topic_names WHERE id = ANY(:ids))"),
            {"n": name, "ids": [int(i) for i in ids]},
        )
    return int(res.rowcount or 0)


def forget(engine: Engine, ids: Sequence[int]) -> int:
    """Delete stored rows; returns how many."""
    with engine.begin() as conn:
        res = conn.execute(text("DELETE FROM eval.topic_names WHERE id = ANY(:ids)"), {"ids": [int(i) for i in ids]})
    return int(res.rowcount or 0)


class TopicMemory:
    """Stored names of one model, applied to a new clustering (see the module docstring)."""

    def __init__(self, names: Sequence[StoredName], *, threshold: float = DEFAULT_THRESHOLD) -> None:
        self.names = list(names)
        self.threshold = float(threshold)

    @classmethod
    def load(cls, engine: Engine, model: str, *, threshold: float = DEFAULT_THRESHOLD) -> TopicMemory:
        return cls(list_names(engine, model), threshold=threshold)

    def __len__(self) -> int:
        return len(self.names)

    def match(self, centroids: np.ndarray) -> dict[int, StoredName]:
        """Topic index → the stored name it matches (cosine ≥ threshold, one-to-one, best pairs first)."""
        dims = {n.centroid.shape[0] for n in self.names}
        if not self.names or len(centroids) == 0 or dims != {centroids.shape[1]}:
            return {}
        S = _unit(centroids) @ _unit(np.vstack([n.centroid for n in self.names])).T
        pairs = sorted(((float(S[i, j]), i, j) for i, j in zip(*np.nonzero(self.threshold <= S), strict=True)),
                       reverse=True)
        used_t: set[int] = set()
        used_n: set[int] = set()
        out: dict[int, StoredName] = {}
        for _, i, j in pairs:
            if i in used_t or j in used_n:
                continue
            used_t.add(i)
            used_n.add(j)
            out[int(i)] = self.names[j]
        return out

    def apply(self, labels: np.ndarray, X: np.ndarray) -> tuple[np.ndarray, dict[int, dict[str, Any]]]:
        """New labels (topics of one stored group merged, renumbered ``0..k'-1`` by first appearance order of
        the old ids) and, per new topic, ``{"name", "merged", "stored_ids", "similarity"}`` for named topics.

        ``labels`` are the topic ids ``0..k-1`` of the rows of ``X`` (unit vectors)."""
        labels = np.asarray(labels, dtype=np.int64)
        k = int(labels.max()) + 1 if len(labels) else 0
        cents = np.zeros((k, X.shape[1]), dtype=np.float64)
        for t in range(k):
            m = labels == t
            if m.any():
                cents[t] = X[m].mean(axis=0)
        matched = self.match(cents)
        groups: dict[str, list[int]] = {}
        for t, n in matched.items():
            groups.setdefault(n.group_key, []).append(t)
        target = np.arange(k)
        for members in groups.values():
            for t in members:
                target[t] = min(members)
        keep = sorted(set(target.tolist()))
        renum = {old: new for new, old in enumerate(keep)}
        new_of_old = np.asarray([renum[int(target[t])] for t in range(k)], dtype=np.int64)
        info: dict[int, dict[str, Any]] = {}
        for members in groups.values():
            new = int(new_of_old[members[0]])
            names = [matched[t] for t in members]
            info[new] = {"name": names[0].name, "merged": len(members), "stored_ids": [n.id for n in names],
                         "similarity": [float(_unit(cents[t]) @ _unit(matched[t].centroid)) for t in members]}
        return (new_of_old[labels] if len(labels) else labels), info

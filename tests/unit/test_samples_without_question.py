"""Seed 002's own example has no question: Semantic Similarity needs none, so the judge reads it (issue 30)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from voproshalych_eval.datasets.files import RecordFileError
from voproshalych_eval.tiers.judge_metrics import read_samples

SEED002 = [{"response": "Столица Российской Федерации — город Москва.", "reference": "Москва является столицей России."}]


def test_semantic_similarity_takes_samples_without_a_question(tmp_path: Path) -> None:
    path = tmp_path / "seed002.json"
    path.write_text(json.dumps(SEED002, ensure_ascii=False), encoding="utf-8")
    samples = read_samples(path, metric="semantic_similarity")
    assert samples[0]["user_input"] == "" and samples[0]["reference"] == SEED002[0]["reference"]
    # a metric that needs the question still refuses it, naming the field
    with pytest.raises(RecordFileError, match="user_input"):
        read_samples(path, metric="faithfulness")


def test_offline_semantic_similarity_scores_a_sample_without_a_question() -> None:
    from voproshalych_eval.judges import Judge

    judge = Judge(None, offline=True)
    res = judge.evaluate("semantic_similarity", dict(SEED002[0]))
    assert res.score is not None and not res.failures

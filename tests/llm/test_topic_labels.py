"""LLM-written topic labels: one call per topic through the real client over HTTP, cached, failures skipped."""

from __future__ import annotations

import pandas as pd

from tests.support.scripted_openai import Reply, ScriptedOpenAI
from voproshalych_eval.analytics.topic_names import llm_labels
from voproshalych_eval.llm import LLMClient, Provider, RetryPolicy

TOPICS = pd.DataFrame([
    {"topic": 0, "kind": "cluster", "terms": ["стипендия", "размер"], "examples": ["сколько стипендия", "размер стипы"]},
    {"topic": 1, "kind": "cluster", "terms": ["общежитие"], "examples": ["как заселиться в общагу"]},
    {"topic": 7, "kind": "category", "terms": [], "examples": ["привет"]},
])


def test_labels_are_written_once_per_topic_and_cached(scripted_openai: ScriptedOpenAI, engine) -> None:  # type: ignore[no-untyped-def]
    client = LLMClient([Provider("scripted", scripted_openai.base_url, None, ["m"])], engine,
                       retry=RetryPolicy(max_attempts=1, initial=0.01))
    scripted_openai.script(Reply.text("«Размер стипендии»."), Reply.error(400))
    labels = llm_labels(TOPICS, client, lang="ru")
    assert labels == {0: "Размер стипендии"}  # quotes and the full stop stripped; the failed topic left out
    assert scripted_openai.count == 2  # categories are not labelled
    body = scripted_openai.requests[0]["messages"][0]["content"]
    assert "стипендия, размер" in body and "- размер стипы" in body
    scripted_openai.script(Reply.text("Общежитие: заселение"))
    again = llm_labels(TOPICS, client, lang="ru")
    assert again == {0: "Размер стипендии", 1: "Общежитие: заселение"}
    assert scripted_openai.count == 3  # topic 0 came from the LLM cache

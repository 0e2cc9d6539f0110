"""A rerun of dataset generation under the same name never overwrites a version: it stores a new one (issue 29 —
a rerun once replaced version 1's 20 items with 3). Offline generation on the demo knowledge base."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.support.dataset_cleanup import drop_new_datasets  # noqa: F401 (autouse fixture)
from voproshalych_eval.cli import main
from voproshalych_eval.datasets.store import get_dataset

PAGES = "https://wiki.sevgu-demo.ru/display/STUD/Stipendii,https://wiki.sevgu-demo.ru/display/STUD/Sport"


def _generate(capsys: pytest.CaptureFixture[str], name: str, size: int) -> dict:
    rc = main(["dataset", "generate", "--size", str(size), "--types", "factual,paraphrase", "--offline",
               "--pages", PAGES, "--name", name, "--no-compare-existing", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["dataset"] == name, out
    return out


def test_a_second_generation_with_the_same_name_makes_version_2(demo_engine, capsys) -> None:  # type: ignore[no-untyped-def]
    name = "rerun_" + uuid.uuid4().hex[:6]
    first = _generate(capsys, name, 6)
    v1 = get_dataset(demo_engine, f"{name}@v1", "golden")
    assert v1.version == 1 and len(v1) == first["n_items"] >= 4
    v1_records = json.loads(json.dumps(v1.records))

    second = _generate(capsys, name, 2)  # a smaller rerun: its items must not replace version 1's
    assert second["dataset_ref"] == f"{name}@v2", second
    v2 = get_dataset(demo_engine, f"{name}@v2", "golden")
    assert v2.version == 2 and len(v2) == second["n_items"] <= 2 and v2.id != v1.id
    again = get_dataset(demo_engine, f"{name}@v1", "golden")
    assert again.id == v1.id and again.content_hash == v1.content_hash and again.records == v1_records
    assert get_dataset(demo_engine, name, "golden").version == 2  # the name means the newest version

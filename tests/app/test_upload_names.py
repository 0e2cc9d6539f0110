"""AppTest: an upload's client-chosen name is a label, never a path (the audit's ``../../x.json`` case).

The uploaded file is a real Streamlit ``UploadedFile`` handed to the page in place of the browser's one;
the page must read it from memory and write nothing where its name points.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
import streamlit as st
from streamlit.runtime.uploaded_file_manager import UploadedFile, UploadedFileRec
from streamlit.testing.v1 import AppTest

from tests.support.dataset_cleanup import drop_new_datasets  # noqa: F401 (autouse fixture)
from voproshalych_eval.config import PROJECT_ROOT

APP = str(PROJECT_ROOT / "app.py")
GOLDEN = [{"question": "Когда начинается сессия?", "chunk_id": 1, "ground_truth_answer": "В январе."}]


def _upload(name: str, data: bytes) -> UploadedFile:
    return UploadedFile(UploadedFileRec(file_id="f1", name=name, type="application/json", data=data),
                        {"upload_url": "", "delete_url": ""})  # type: ignore[arg-type]


def test_tier1_upload_named_with_dot_dot_writes_nothing_outside(demo_engine, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    evil = "../../x.json"
    upload = _upload(evil, json.dumps(GOLDEN, ensure_ascii=False).encode())
    real = st.file_uploader

    def fake(label, *args, **kwargs):  # type: ignore[no-untyped-def]
        if kwargs.get("key") == "t1_upload":
            real(label, *args, **kwargs)  # the widget is still drawn
            return upload
        return real(label, *args, **kwargs)

    monkeypatch.setattr(st, "file_uploader", fake)
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["ui_language"] = "en"
    at.run()
    at.switch_page("pages/tier1_retrieval.py").run()
    assert not at.exception, [e.value for e in at.exception]
    # a temporary folder under `deep` + "../../x.json" would be tmp_path/a/x.json
    assert not (tmp_path / "a" / "x.json").exists()
    assert not list(tmp_path.rglob("x.json"))
    # the file itself is accepted, named by its base name only
    assert not at.error, [e.value for e in at.error]
    assert any("'x' loaded" in s.value for s in at.success), [s.value for s in at.success]

"""Uploaded files, read from memory: the one way pages take a ``st.file_uploader`` file.

The browser chooses an upload's name; it is a label, never a path. :func:`read` returns the name cut to its
last component (``../../x.json`` → ``x.json``, ``C:\\a\\b.csv`` → ``b.csv``) and the bytes; readers take
the bytes (``data=``) and use the name only for its suffix and in messages. Nothing is written to disk.
"""

from __future__ import annotations

import re
from typing import Any

_SEPARATORS = re.compile(r"[\\/]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def safe_name(client_name: str | None, default: str = "upload") -> str:
    """The last path component of a client-sent file name, without control characters; never ``.``/``..``."""
    base = _SEPARATORS.split(client_name or "")[-1]
    base = _CONTROL.sub("", base).strip()
    return default if base in ("", ".", "..") else base


def read(upload: Any) -> tuple[str, bytes]:
    """``(safe name, bytes)`` of an uploaded file (a Streamlit ``UploadedFile``)."""
    return safe_name(getattr(upload, "name", None)), bytes(upload.getvalue())

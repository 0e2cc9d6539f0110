"""Untrusted text on a page: bot answers, dialog and chunk texts, questions, judges' explanations, error
messages that quote a reply — shown as text, never interpreted as Markdown or HTML.

Streamlit renders Markdown in ``st.markdown``, ``st.write`` (for strings), ``st.caption``, alerts and
expander labels; a bot answer holding ``![x](https://host/pixel.png)`` would make every viewer's browser fetch
that image (the audit's case), and links, headings or ``:red[…]`` directives would restyle the page.
Pages pass such values through this module only:

* :func:`text` — a value on its own (``st.text``: no Markdown, no HTML, line breaks kept);
* :func:`md` — a value inside a Markdown string (a label, an f-string in a caption or an alert): every
  character Markdown, Streamlit's directives or HTML give a meaning to is backslash-escaped, line breaks
  become spaces. ``tests/unit/test_untrusted_pages.py`` checks statically that pages do not pass data to
  Markdown otherwise.
"""

from __future__ import annotations

import re
from typing import Any

import streamlit as st

#: characters that open Markdown syntax anywhere in a line: images, links and Streamlit's ``:color[…]``
#: directives (``[``, ``]``, ``!``), HTML (``<``, ``>``), code, emphasis, strikethrough, LaTeX; an underscore only
#: at a word boundary (``chunk_id`` stays readable: intraword ``_`` is never emphasis)
_SPECIAL = re.compile(r"([\\`*\[\]<>!~$|&]|(?<!\w)_|_(?!\w))")
#: block syntax at the start of the text (headings, lists, quotes, rules, numbered lists)
_BLOCK_START = re.compile(r"^(\s*)([#>+=-])")
_NUMBERED = re.compile(r"^(\s*\d+)([.)])")
_BREAKS = re.compile(r"[\r\n\u2028\u2029]+")


def md(value: Any) -> str:
    """``value`` as literal text inside Markdown (escaped; line breaks as spaces); ``—`` for None."""
    if value is None:
        return "—"
    out = _SPECIAL.sub(r"\\\1", _BREAKS.sub(" ", str(value)))
    out = _BLOCK_START.sub(lambda m: m.group(1) + "\\" + m.group(2), out)
    return _NUMBERED.sub(lambda m: m.group(1) + "\\" + m.group(2), out)


def text(value: Any, *, where: Any = None, empty: str = "—") -> None:
    """Show ``value`` as plain text (``st.text``) in ``where`` (a column or container; default the page)."""
    target = where if where is not None else st
    target.text(empty if value is None or (isinstance(value, float) and value != value) else str(value))


def labelled(label: str, value: Any, *, where: Any = None) -> None:
    """A bold label (trusted, e.g. from ``tr``) above an untrusted value shown as text."""
    target = where if where is not None else st
    target.markdown(f"**{label}**")
    text(value, where=target)

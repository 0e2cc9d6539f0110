"""The dataset store.

* :mod:`.store` — dataset formats, validation, storage (content-addressed versions);
* :mod:`.versions` — a name's version history, diffs and edits;
* :mod:`.annotations` — review state and annotation files;
* :mod:`.files` — the one reader of CSV / JSON / JSONL input files and its value checks;
* :mod:`.staleness` — which datasets reference chunks that changed, and the likely new chunk.
"""

"""Golden datasets from the knowledge base and the question log.

* :mod:`.sampling` — the sampling plan over pages and question types (pure);
* :mod:`.gates` — the quality gates with their formulas (pure);
* :mod:`.templates` — the labelled offline template generator;
* :mod:`.plan` — generation as an executor plan (resumable run) that stores a new dataset version;
* :mod:`.picker` — the search-assisted chunk picker (vector + full-text hits with their page);
* :mod:`.realq` — picking real questions from the log and labelling them into a golden set.
"""

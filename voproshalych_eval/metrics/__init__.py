"""Pure metric functions (no I/O, no Streamlit), in the style of ``sklearn.metrics``.

Modules: ``retrieval`` (ranking metrics at chunk and URL level), ``text_overlap`` (ROUGE/BLEU/chrF
with a Cyrillic-aware tokenizer), ``similarity`` (vector similarity), ``classification``
(binary reports, Cohen's and Fleiss' kappa), ``consistency`` (self-consistency of repeated runs),
``statistics`` (aggregates with bootstrap confidence intervals, paired tests, percentiles) and
``geometry`` (vector-space geometry of embeddings).
"""

"""voproshalych_eval: evaluation and analytics workbench for Russian-language RAG on PostgreSQL + pgvector."""

__version__ = "0.1.0"

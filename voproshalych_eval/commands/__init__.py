"""CLI subcommands, one module per feature; each exposes ``register(subparsers)``."""

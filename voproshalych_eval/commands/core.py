"""``demo``, ``status`` and ``serve``."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from voproshalych_eval.commands.common import add_json_flag, emit, engine, progress
from voproshalych_eval.config import PROJECT_ROOT, get_settings


def register(sub: Any) -> None:
    p = sub.add_parser("demo", help="load the demo corpus into the database (idempotent)")
    p.add_argument("--force", action="store_true", help="reload even if already loaded")
    p.add_argument("--embedder", default=None, help="embedder for the demo vectors (default: configured)")
    add_json_flag(p)
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("status", help="data source, embedder and counts")
    add_json_flag(p)
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("serve", help="run the Streamlit app (bound to 127.0.0.1 by default)")
    p.add_argument("--address", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8501)
    p.add_argument("--no-demo", action="store_true", help="do not load the demo data first")
    p.set_defaults(func=cmd_serve)


def cmd_demo(args: Any) -> int:
    from voproshalych_eval.demo import load_demo

    settings = get_settings()
    result = load_demo(engine(), embedder_name=args.embedder or settings.embedder, force=args.force, progress=progress)
    human = "\n".join(f"{k}: {v}" for k, v in result.items())
    emit(result, args.json, human)
    return 0


def status_snapshot() -> dict[str, Any]:
    from voproshalych_eval.db.meta import stored_embedding_model
    from voproshalych_eval.db.production import inspect_schema, table_counts
    from voproshalych_eval.embeddings import BUILTIN_EMBEDDERS

    settings = get_settings()
    eng = engine()
    schema = inspect_schema(eng)
    dims = {"use-multilingual": 512, "e5-small": 384}
    return {
        "data_source": {
            "kind": "embedded" if settings.embedded else "url",
            "database": settings.database_label,
        },
        "embedder": {
            "name": settings.embedder,
            "dimension": dims.get(settings.embedder),
            "builtin": settings.embedder in BUILTIN_EMBEDDERS,
        },
        "stored_vectors": {
            "model": (stored_embedding_model(eng) or {}).get("model"),
            "chunk_dimension": schema.chunk_dim,
            "chunk_variant": schema.chunk_variant,
        },
        "counts": table_counts(eng),
    }


def cmd_status(args: Any) -> int:
    snap = status_snapshot()
    if snap["embedder"]["dimension"] is None:
        from voproshalych_eval.embeddings import get_embedder

        snap["embedder"]["dimension"] = get_embedder(snap["embedder"]["name"]).dim
    human = (
        f"database: {snap['data_source']['database']} ({snap['data_source']['kind']})\n"
        f"embedder: {snap['embedder']['name']} ({snap['embedder']['dimension']}-d)\n"
        f"stored vectors: {snap['stored_vectors']}\n"
        + "\n".join(f"{k}: {v}" for k, v in snap["counts"].items())
    )
    emit(snap, args.json, human)
    return 0


def cmd_serve(args: Any) -> int:
    if not args.no_demo:
        from voproshalych_eval.demo import load_demo

        load_demo(engine(), embedder_name=get_settings().embedder, progress=progress)
    cmd = [
        sys.executable, "-m", "streamlit", "run", str(PROJECT_ROOT / "app.py"),
        "--server.address", args.address, "--server.port", str(args.port), "--server.headless", "true",
    ]
    progress(f"Starting the app on http://{args.address}:{args.port}")
    return subprocess.call(cmd, cwd=PROJECT_ROOT)  # the child inherits the environment

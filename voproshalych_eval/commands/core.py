"""``demo``, ``status`` and ``serve``."""

from __future__ import annotations

import subprocess
import sys
from typing import Any
from urllib.parse import urlsplit

from voproshalych_eval.commands.output import add_json_flag, emit, engine, progress
from voproshalych_eval.commands.team import team_launch
from voproshalych_eval.config import PROJECT_ROOT, environ, get_settings
from voproshalych_eval.db import snapshots
from voproshalych_eval.db.engine import database_name, demo_url
from voproshalych_eval.db.production import table_counts
from voproshalych_eval.db.server import running_servers
from voproshalych_eval.endpoints import public_dsn


def register(sub: Any) -> None:
    p = sub.add_parser("demo", help="load the demo corpus into the demo source database and snapshot it (idempotent)")
    p.add_argument("--force", action="store_true", help="reload even if already loaded")
    p.add_argument("--embedder", default=None, help="embedder for the demo vectors (default: configured)")
    add_json_flag(p)
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("status", help="source, store, current snapshot, embedder and counts")
    add_json_flag(p)
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("serve", help="run the Streamlit app (bound to 127.0.0.1 by default)")
    p.add_argument("--address", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8501)
    p.add_argument("--no-demo", action="store_true", help="do not load the demo data first")
    p.add_argument("--team", action="store_true",
                   help="team mode: sign-in through the organisation's OpenID Connect provider, roles, audit log "
                        "(VOPROSHALYCH_EVAL_OIDC_*; README 'Team deployment')")
    p.set_defaults(func=cmd_serve)


def cmd_demo(args: Any) -> int:
    from voproshalych_eval.demo import load_demo  # heavy: keeps demo out of --help (+4 ms)

    settings = get_settings()
    if settings.database_url:
        raise RuntimeError(
            "A source database is configured (DATABASE_URL): the demo is a source of its own and is not loaded. "
            "Unset DATABASE_URL to work on the demo."
        )
    result = load_demo(engine(), embedder_name=args.embedder or settings.embedder, force=args.force, progress=progress)
    human = "\n".join(f"{k}: {v}" for k, v in result.items())
    emit(result, args.json, human)
    return 0


def _source_info(settings: Any) -> dict[str, Any]:
    if not settings.database_url:
        return {"kind": "demo", "host": "embedded" if settings.embedded_store else urlsplit(settings.store_url).hostname,
                "database": database_name(demo_url(settings))}
    return {"kind": "url", "host": public_dsn(settings.database_url).rsplit("/", 1)[0].split(":")[0],
            "database": settings.database_label}


def _server_pid(settings: Any) -> int | None:
    """PID of the embedded PostgreSQL server of the home (None for a store given by URL)."""
    if not settings.embedded_store:
        return None
    pids = running_servers(settings.pgdata)
    return pids[0] if len(pids) == 1 else None


def status_snapshot(*, check_source: bool = True) -> dict[str, Any]:
    """What ``status`` reports: source (no credentials), store, current snapshot, embedder, counts."""
    # heavy: keeps embeddings out of --help (+1 ms)
    from voproshalych_eval.embeddings import BUILTIN_DIMENSIONS as dims

    # heavy: keeps embeddings out of --help (+1 ms)
    from voproshalych_eval.embeddings import BUILTIN_EMBEDDERS

    settings = get_settings()
    eng = engine()
    snap = snapshots.current(eng)
    source = _source_info(settings)
    if check_source:
        source["changed_since_snapshot"] = snapshots.source_changed(eng) if snap is not None else None
    return {
        "source": source,
        "store": {
            "kind": "embedded" if settings.embedded_store else "url",
            "database": str(settings.pgdata) if settings.embedded_store else settings.store_label,
            "server_pid": _server_pid(settings),
        },
        "snapshot": snap.to_json() if snap is not None else None,
        "n_snapshots": len(snapshots.list_snapshots(eng)),
        "embedder": {
            "name": settings.embedder,
            "dimension": dims.get(settings.embedder),
            "builtin": settings.embedder in BUILTIN_EMBEDDERS,
        },
        "stored_vectors": {
            "model": snap.stored_model if snap else None,
            "chunk_dimension": snap.chunk_dim if snap else None,
            "chunk_variant": snap.chunk_variant if snap else None,
        },
        "counts": table_counts(eng) if snap is not None else {"chunks": None, "pages": None, "questions": None,
                                                               "users": None},
    }


def cmd_status(args: Any) -> int:
    snap = status_snapshot()
    if snap["embedder"]["dimension"] is None:
        from voproshalych_eval.embeddings import get_embedder  # heavy: keeps embeddings out of --help (+1 ms)

        snap["embedder"]["dimension"] = get_embedder(snap["embedder"]["name"]).dim
    src, store, cur = snap["source"], snap["store"], snap["snapshot"]
    changed = src.get("changed_since_snapshot")
    if cur is None:
        snap_line = "snapshot: none yet (voproshalych-eval demo, or voproshalych-eval snapshot take)"
    else:
        snap_line = (
            f"snapshot: #{cur['id']} {cur['content_hash'][:12]} taken {cur['taken_at'][:19]} — {cur['n_chunks']} chunks, "
            f"{cur['n_pages']} pages, {cur['n_questions']} logged questions"
            + (" (the source has changed since: voproshalych-eval snapshot take)" if changed else "")
        )
    human = (
        f"source: {src['kind']} {src['database']} (host {src['host']}, read-only)\n"
        f"store: {store['kind']} {store['database']}\n"
        f"{snap_line}\n"
        f"embedder: {snap['embedder']['name']} ({snap['embedder']['dimension']}-d)\n"
        f"stored vectors: {snap['stored_vectors']}\n"
        + "\n".join(f"{k}: {v}" for k, v in snap["counts"].items())
    )
    emit(snap, args.json, human)
    return 0


def cmd_serve(args: Any) -> int:
    if not args.no_demo and not get_settings().database_url:
        from voproshalych_eval.demo import load_demo  # heavy: keeps demo out of --help (+4 ms)

        load_demo(engine(), embedder_name=get_settings().embedder, progress=progress)
    # serve.py serves app.py and warms the process (the pages' imports, the store) before it answers
    cmd = [
        sys.executable, "-m", "streamlit", "run", str(PROJECT_ROOT / "serve.py"),
        "--server.address", args.address, "--server.port", str(args.port), "--server.headless", "true",
    ]
    child_env = None  # the child inherits the environment
    if getattr(args, "team", False):
        extra, changes, line = team_launch(get_settings(), address=args.address, port=args.port)
        # the team entry point: app.py run from a folder without pages/ (no page reachable around sign-in)
        changes = {**changes, "VOPROSHALYCH_EVAL_APP_SCRIPT": str(PROJECT_ROOT / "voproshalych_eval" / "ui" / "team_app.py")}
        cmd += extra
        child_env = {k: v for k, v in {**environ(), **changes}.items() if v}
        progress(line)
    progress(f"Starting the app on http://{args.address}:{args.port}")
    return subprocess.call(cmd, cwd=PROJECT_ROOT, env=child_env)

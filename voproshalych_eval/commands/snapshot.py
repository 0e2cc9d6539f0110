"""``snapshot``: take, list, show, diff, use and delete snapshots of the source's knowledge base and log."""

from __future__ import annotations

from typing import Any

from voproshalych_eval.commands.output import add_json_flag, emit, engine, progress
from voproshalych_eval.db import snapshots
from voproshalych_eval.engine import runs


def register(sub: Any) -> None:
    p = sub.add_parser("snapshot", help="snapshots of the source's knowledge base and question log (take/list/show/diff)")
    ssub = p.add_subparsers(dest="snapshot_command", metavar="ACTION")
    ssub.required = True

    q = ssub.add_parser("take", help="snapshot the source now (an unchanged source gives the same snapshot)")
    add_json_flag(q)
    q.set_defaults(func=cmd_take)

    q = ssub.add_parser("list", help="every snapshot in the store, newest first")
    add_json_flag(q)
    q.set_defaults(func=cmd_list)

    q = ssub.add_parser("show", help="one snapshot (default: the current one)")
    q.add_argument("id", type=int, nargs="?", default=None)
    add_json_flag(q)
    q.set_defaults(func=cmd_show)

    q = ssub.add_parser("diff", help="chunks added / removed / with changed text, URL or vector from A to B")
    q.add_argument("a", type=int)
    q.add_argument("b", type=int, nargs="?", default=None, help="default: the current snapshot")
    add_json_flag(q)
    q.set_defaults(func=cmd_diff)

    q = ssub.add_parser("use", help="make a snapshot current (pages and readers use it by default; runs take the "
                        "source's present content unless given --snapshot)")
    q.add_argument("id", type=int)
    add_json_flag(q)
    q.set_defaults(func=cmd_use)

    q = ssub.add_parser("delete", help="delete a snapshot that is not current and that no run read")
    q.add_argument("id", type=int)
    q.add_argument("--force", action="store_true", help="delete even if recorded runs read it")
    add_json_flag(q)
    q.set_defaults(func=cmd_delete)


def _line(snap: Any, current_id: int | None) -> str:
    mark = "*" if snap.id == current_id else " "
    return (
        f"{mark} #{snap.id:<4d} {snap.short_hash}  {snap.taken_at:%Y-%m-%d %H:%M}  {snap.source_kind}:{snap.source_label}  "
        f"{snap.n_chunks} chunks / {snap.n_pages} pages / {snap.n_questions} questions"
        + (f"  stored model {snap.stored_model}" if snap.stored_model else "")
    )


def cmd_take(args: Any) -> int:
    snap = snapshots.take(engine(), progress=progress)
    out = {**snap.to_json(), "reused": snap.reused}
    human = ("unchanged source, existing snapshot\n" if snap.reused else "new snapshot\n") + _line(snap, snap.id)
    emit(out, args.json, human)
    return 0


def cmd_list(args: Any) -> int:
    eng = engine()
    current = snapshots.current_id(eng)
    items = snapshots.list_snapshots(eng)
    out = {"current": current, "snapshots": [s.to_json() for s in items]}
    human = "\n".join(_line(s, current) for s in items) if items else "no snapshots yet (voproshalych-eval snapshot take)"
    emit(out, args.json, human)
    return 0


def cmd_show(args: Any) -> int:
    eng = engine()
    snap = snapshots.resolve(eng, args.id) if args.id is not None else snapshots.current(eng)
    if snap is None:
        raise LookupError("No snapshot yet: run `voproshalych-eval snapshot take` (or `voproshalych-eval demo`).")
    out = snap.to_json()
    out["current"] = snap.id == snapshots.current_id(eng)
    human = "\n".join(f"{k}: {v}" for k, v in out.items())
    emit(out, args.json, human)
    return 0


def cmd_diff(args: Any) -> int:
    eng = engine()
    b = args.b if args.b is not None else snapshots.current_id(eng)
    if b is None:
        raise LookupError("No current snapshot to compare with: give both snapshot ids.")
    d = snapshots.diff(eng, args.a, b)

    def ids(values: list[int]) -> str:
        shown = ", ".join(map(str, values[:20]))
        return f"{len(values)}" + (f" ({shown}{', …' if len(values) > 20 else ''})" if values else "")

    human = (
        f"snapshot #{d.a} -> #{d.b}" + (": identical" if d.unchanged else "") + "\n"
        f"chunks added: {ids(d.added)}\nchunks removed: {ids(d.removed)}\ntext changed: {ids(d.text_changed)}\n"
        f"URL changed: {ids(d.url_changed)}\nvector changed: {ids(d.embedding_changed)}\n"
        f"log rows added / removed / changed: {d.log_added} / {d.log_removed} / {d.log_changed}"
    )
    emit(d.to_json(), args.json, human)
    return 0


def cmd_use(args: Any) -> int:
    eng = engine()
    snap = snapshots.set_current(eng, args.id)
    emit(snap.to_json(), args.json, _line(snap, snap.id))
    return 0


def cmd_delete(args: Any) -> int:
    eng = engine()
    snapshots.delete(eng, args.id, n_runs=runs.count_runs_reading_snapshot(eng, args.id), force=args.force)
    emit({"deleted": args.id}, args.json, f"snapshot #{args.id} deleted")
    return 0

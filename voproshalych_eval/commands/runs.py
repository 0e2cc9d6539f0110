"""``runs list | show ID | compare A B | export ID`` — the run registry from the command line."""

from __future__ import annotations

import sys
from datetime import date
from pathlib import Path
from typing import Any

from voproshalych_eval.bilingual import render
from voproshalych_eval.commands.output import EXIT_INTERRUPTED, add_json_flag, emit, engine, exit_code
from voproshalych_eval.commands.resume import human_summary, output_language, printer
from voproshalych_eval.engine import baselines, runs
from voproshalych_eval.engine.baselines import STATUS_LABELS
from voproshalych_eval.engine.executor import Progress
from voproshalych_eval.engine.job_queue import wait_run
from voproshalych_eval.engine.leaderboard import dataset_leaderboard
from voproshalych_eval.engine.runs import frame_records
from voproshalych_eval.metrics import catalog
from voproshalych_eval.metrics.formatting import format_seconds, format_value
from voproshalych_eval.metrics.statistics import correction_label


def register(sub: Any) -> None:
    p = sub.add_parser("runs", help="the run registry: list, show, compare, export")
    rs = p.add_subparsers(dest="runs_command", metavar="ACTION")
    rs.required = True

    q = rs.add_parser("list", help="runs, newest first, with filters")
    q.add_argument("--tier", action="append", help="tier key (repeatable): tier0, tier1, tier2, …")
    q.add_argument("--status", action="append",
                   help="running, interrupted, done, done_with_failures, failed, cancelled (repeatable)")
    q.add_argument("--dataset", action="append", help="dataset name (repeatable)")
    q.add_argument("--model", help="substring of any model name (embedder, generator, judge)")
    q.add_argument("--since", type=date.fromisoformat, help="started on or after YYYY-MM-DD")
    q.add_argument("--until", type=date.fromisoformat, help="started on or before YYYY-MM-DD")
    q.add_argument("--limit", type=int, default=100)
    q.add_argument("--lang", choices=("ru", "en"), default=None,
                   help="language of the output (default: the configured VOPROSHALYCH_EVAL_LANG, Russian)")
    add_json_flag(q)
    q.set_defaults(func=cmd_list)

    q = rs.add_parser("wait", help="follow a run (a queued one: `--queue`) until it ends; exits with its exit code")
    q.add_argument("run_id", type=int)
    q.add_argument("--timeout", type=float, default=None, metavar="SECONDS", help="give up after this long (exit 2)")
    add_json_flag(q)
    q.set_defaults(func=cmd_wait)

    q = rs.add_parser("show", help="one run: metadata, aggregates with CIs, baseline status, failures")
    q.add_argument("run_id", type=int)
    q.add_argument("--items", action="store_true", help="include the per-item table (JSON)")
    q.add_argument("--lang", choices=("ru", "en"), default=None,
                   help="language of the output (default: the configured VOPROSHALYCH_EVAL_LANG, Russian)")
    add_json_flag(q)
    q.set_defaults(func=cmd_show)

    q = rs.add_parser("compare", help="run B against the reference run A: paired tests and per-item diff")
    q.add_argument("run_a", type=int)
    q.add_argument("run_b", type=int)
    q.add_argument("--metric", help="per-item diff of this metric (default: the first tested one)")
    q.add_argument("--method", choices=("permutation", "bootstrap"), default="permutation")
    q.add_argument("--top", type=int, default=10, help="items shown per direction in the human output")
    q.add_argument("--force", action="store_true",
                   help="compare runs of different tiers or datasets anyway (their items may not correspond)")
    q.add_argument("--lang", choices=("ru", "en"), default=None,
                   help="language of the output (default: the configured VOPROSHALYCH_EVAL_LANG, Russian)")
    add_json_flag(q)
    q.set_defaults(func=cmd_compare)

    q = rs.add_parser("export", help="a run report: json, md, html (self-contained) or csv")
    q.add_argument("run_id", type=int)
    q.add_argument("--format", choices=("json", "md", "html", "csv"), default="json")
    q.add_argument("--csv-part", choices=("items", "metrics"), default="items", help="table written by --format csv")
    q.add_argument("--lang", choices=("ru", "en"), default=None,
                   help="language of a md/html report (default: the configured VOPROSHALYCH_EVAL_LANG, Russian)")
    q.add_argument("--out", help="write to this file (default: stdout)")
    add_json_flag(q)
    q.set_defaults(func=cmd_export)

    q = rs.add_parser("leaderboard", help="configurations run on one dataset, ranked by a metric, with cost, tokens "
                                          "and latency p50/p95")
    q.add_argument("tier", help="the plan (tier1, tier2, tier3, …)")
    q.add_argument("--metric", required=True, help="metric key to rank by (e.g. chunk.mrr, avg_faithfulness)")
    q.add_argument("--dataset", help="dataset name (default: every dataset of the plan's runs)")
    q.add_argument("--lang", choices=("ru", "en"), default=None,
                   help="language of the output (default: the configured VOPROSHALYCH_EVAL_LANG, Russian)")
    add_json_flag(q)
    q.set_defaults(func=cmd_leaderboard)


def _fmt(v: Any) -> str:
    if v is None:
        return "—"
    return f"{v:.4f}" if isinstance(v, float) else str(v)


def cmd_list(args: Any) -> int:
    found = runs.list_runs(
        engine(), tier=args.tier, status=args.status, dataset_name=args.dataset, model=args.model,
        since=args.since, until=args.until, limit=args.limit,
    )
    # heavy: keeps describe out of --help (+1 ms)
    from voproshalych_eval.engine.describe import models_words, tier_title
    df = runs.runs_frame(found)
    records = runs.frame_records(df)
    lang = output_language(args)
    en = lang == "en"
    h = (("id", "tier", "status", "dataset", "started", "cost, $", "tokens", "p50, s", "models") if en else
         ("№", "уровень", "состояние", "набор данных", "начат", "стоимость, $", "токены", "p50, с", "модели"))
    lines = [f"{h[0]:>5}  {h[1]:<24} {h[2]:<18} {h[3]:<16} {h[4]:<17} {h[5]:>12} {h[6]:>8} {h[7]:>7}  {h[8]}"]
    for r, row in zip(found, df.to_dict("records"), strict=True):
        state_ru, state_en = runs.STATE_LABELS.get(runs.run_state(r), (runs.run_state(r),) * 2)
        state = (state_en if en else state_ru) + ((" (mixed)" if en else " (смешанный)") if r.mixed else "")
        lines.append(
            f"{r.id:>5}  {tier_title(r.tier, lang)[:24]:<24} {state[:18]:<18} {(r.dataset_name or '—')[:16]:<16} "
            f"{r.started_at:%Y-%m-%d %H:%M} {format_value('cost_usd', row['cost_usd'], lang):>12} "
            f"{format_value('tokens', row['tokens'], lang):>8} {format_value('latency_p50', row['latency_p50'], lang):>7}  "
            f"{', '.join(models_words(r, lang)) or '—'}"
        )
    emit({"n": len(records), "runs": records}, args.json,
         "\n".join(lines) if found else ("no runs" if en else "запусков нет"))
    return 0


def _count(v: Any) -> str:
    """A count (n, failures) as a whole number, ``—`` when missing."""
    return "—" if v is None or v != v else str(round(float(v)))


def _metric_lines(rows: list[dict[str, Any]], lang: str) -> list[str]:
    """The aggregates as a table: catalog label, value and CI written by the metric's kind and scale, the
    scale and better direction, n, failed, partial (quorum short of every vote), baseline and status."""
    arrows = {"higher": "↑", "lower": "↓"}
    h = (("метрика", "значение", "95% ДИ", "шкала", "сбой", "част", "база", "статус") if lang != "en" else
         ("metric", "value", "95% CI", "scale", "fail", "part", "baseline", "status"))
    out = [f"{h[0]:<44} {h[1]:>10} {h[2]:>21} {h[3]:>9} {'n':>5} {h[4]:>5} {h[5]:>5} {h[6]:>9}  {h[7]}"]
    for m in rows:
        key = m["metric"]

        def fv(v: Any, key: str = key) -> str:
            return format_value(key, v, lang)

        ci = f"[{fv(m['ci_low'])}; {fv(m['ci_high'])}]" if m.get("ci_low") is not None else "—"
        spec = catalog.get(key)
        scale = f"{spec.scale.label(lang) if spec else '?'} {arrows.get(str(m.get('direction')), '')}".strip()
        out.append(
            f"{catalog.label(key, lang)[:44]:<44} {fv(m['value']):>10} {ci:>21} {scale:>9} {_count(m.get('n')):>5} "
            f"{_count(m.get('n_failed')):>5} {_count(m.get('n_partial')):>5} {fv(m.get('baseline')):>9}  "
            f"{(lambda p: p[1] if lang == 'en' else p[0])(STATUS_LABELS.get(m.get('status'), ('', ''))) if m.get('status') else ''}"
        )
    return out


def cmd_wait(args: Any) -> int:
    """Follow the run's counts from the store until it stops; print its outcome; exit with its exit code
    (an ``interrupted`` run — nothing works it any more — exits 130, as an interrupted command does)."""
    eng = engine()
    state = wait_run(eng, args.run_id, timeout=args.timeout, on_progress=printer())
    run = runs.get_run(eng, args.run_id)
    counts = runs.count_items(eng, args.run_id)
    prog = Progress(run_id=args.run_id, total=int(run.n_items_total or 0), done=counts.get("done", 0),
                    failed=counts.get("failed", 0), status=state, last_error=run.error)
    metrics = run.metrics or {}
    emit({"run_id": args.run_id, "tier": run.tier, "status": state, "n_done": prog.done, "n_failed": prog.failed,
          "error": run.error, "metrics": metrics}, args.json, human_summary(args.run_id, prog, metrics))
    return EXIT_INTERRUPTED if state == "interrupted" else exit_code(state)


def cmd_show(args: Any) -> int:
    # heavy: keeps describe out of --help (+1 ms)
    from voproshalych_eval.engine.describe import models_words, param_rows, tier_title, when

    data = runs.export_data(engine(), args.run_id)
    if not args.items:
        data = {k: v for k, v in data.items() if k != "items"}
    lang = output_language(args)
    r, st = data["run"], data["baseline_status"]

    def t(ru: str, en: str) -> str:
        return en if lang == "en" else ru

    state_ru, state_en = runs.STATE_LABELS.get(str(r["state"]), (str(r["state"]), str(r["state"])))
    status_ru, status_en = baselines.STATUS_LABELS.get(st["status"], (st["status"], st["status"]))
    params = "; ".join(f"{k}: {v}" for k, v in param_rows(r.get("params"), lang)) or "—"
    lines = [
        f"{t('запуск', 'run')} #{r['id']} · {tier_title(str(r['tier']), lang)} · {t(state_ru, state_en)}"
        + (f" · {r['label']}" if r.get("label") else "")
        + (f" · {t('СМЕШАННЫЙ', 'MIXED')} ({r.get('mixed_reason')})" if r.get("mixed") else ""),
        f"{t('набор данных', 'dataset')}: {r.get('dataset_name') or '—'} ({(r.get('dataset_hash') or '—')[:12]})",
        f"{t('модели', 'models')}: {', '.join(models_words(r, lang)) or '—'}",
        f"{t('параметры', 'parameters')}: {params}",
        f"{t('версия кода', 'code')}: {r.get('code_version') or '—'} · {t('запустил', 'by')} {r.get('created_by') or '—'}"
        f" · {when(r.get('started_at'))}",
        t(f"элементы: {r['n_items_done']} выполнено, {r['n_items_failed']} со сбоем (из {r.get('n_items_total') or '?'})",
          f"items: {r['n_items_done']} done, {r['n_items_failed']} failed (of {r.get('n_items_total') or '?'})"),
        f"{t('статус относительно базовых уровней', 'baseline status')}: {baselines.STATUS_ICONS.get(st['status'], '')} "
        f"{t(status_ru, status_en)}",
        "",
        *_metric_lines(data["metrics"], lang),
    ]
    if data["failures"]:
        lines += ["", f"{t('сбои', 'failures')} ({len(data['failures'])}):"] + [
            f"  {f['item_key']}: {f['error']}" for f in data["failures"][:20]
        ]
    emit(data, args.json, "\n".join(lines))
    return 0


def _effect(row: dict[str, Any]) -> str:
    """``d_z [low; high]`` of a comparison row, ``—`` without a paired test."""
    def num(v: Any) -> float | None:
        return None if v is None or v != v else float(v)

    d, lo, hi = num(row.get("effect_size")), num(row.get("effect_ci_low")), num(row.get("effect_ci_high"))
    if d is None:
        return "—"
    return f"{d:.2f} [{lo:.2f}; {hi:.2f}]" if lo is not None and hi is not None else f"{d:.2f}"


def cmd_compare(args: Any) -> int:
    cmp = runs.compare_runs(engine(), args.run_a, args.run_b, method=args.method, force=args.force)
    tested = cmp.metrics[cmp.metrics["n_pairs"] > 0]
    metric = args.metric or (tested["metric"].iloc[0] if len(tested) else None)
    diff = cmp.item_diff(metric) if metric else None
    out = cmp.to_dict(with_items=False)
    out["item_diff_metric"] = metric
    out["item_diff"] = runs.frame_records(diff) if diff is not None else []
    lang = output_language(args)

    def t(ru: str, en: str) -> str:
        return en if lang == "en" else ru

    verdicts = {"better": ("лучше", "better"), "worse": ("хуже", "worse"),
                "no significant difference": ("нет значимой разницы", "no significant difference"),
                "changed": ("изменилась", "changed"), "no per-item data": ("нет данных по элементам", "no per-item data"),
                "no valid pairs": ("нет валидных пар", "no valid pairs")}
    changes = {"worse": ("хуже", "worse"), "better": ("лучше", "better"), "down": ("снизилось", "down"),
               "up": ("выросло", "up")}
    correction = correction_label(cmp.correction, lang)
    lines = [t(f"B = запуск #{args.run_b} против A = запуск #{args.run_a}", f"B = run #{args.run_b} against A = run #{args.run_a}")]
    lines += [t("предупреждение: ", "warning: ") + render(w, lang) for w in cmp.warnings]
    lines.append(t(f"выводы по p-значениям с поправкой ({correction}, p_adj); исходное p сохранено; d_z — размер "
                   "эффекта Коэна с 95% бутстреп-ДИ",
                   f"verdicts on p-values adjusted by {correction} (p_adj); raw p kept; d_z = Cohen's effect size "
                   "with its 95% bootstrap CI"))
    lines.append(f"{t('метрика', 'metric'):<34} {'A':>9} {'B':>9} {'B−A':>9} {t('95% ДИ (парный)', '95% CI (paired)'):>21} "
                 f"{'p':>7} {'p_adj':>7} {t('d_z [95% ДИ]', 'd_z [95% CI]'):>20} {'n':>5}  {t('вывод', 'verdict')}")
    for m in cmp.metrics.to_dict("records"):
        def fv(v: Any, key: str = str(m["metric"])) -> str:
            return format_value(key, v, lang)

        ci = f"[{fv(m['ci_low'])}; {fv(m['ci_high'])}]" if m["n_pairs"] else "—"
        p = format_value(None, m["p_value"], lang) if m["n_pairs"] else "—"
        padj = format_value(None, m.get("p_adjusted"), lang) if m["n_pairs"] else "—"
        dz = _effect(m)
        verdict = verdicts.get(str(m["verdict"]), (str(m["verdict"]),) * 2)
        lines.append(
            f"{catalog.label(m['metric'], lang)[:34]:<34} {fv(m['a']):>9} {fv(m['b']):>9} {fv(m['diff']):>9} {ci:>21} "
            f"{p:>7} {padj:>7} {dz:>20} {m['n_pairs']:>5}  {t(*verdict)}"
        )
    if diff is not None:
        for label in ("worse", "better", "down", "up"):  # up/down: a metric with no better direction
            if label in ("down", "up") and not (diff["change"] == label).any():
                continue
            part = diff[diff["change"] == label].head(args.top)
            n = int((diff["change"] == label).sum())
            lines += ["", t(f"{changes[label][0]} по метрике «{catalog.label(metric, lang)}» (элементов: {n}):",
                            f"{label} on {catalog.label(metric, lang)} ({n} items):")]
            lines += [f"  {r['item_key']}: {format_value(metric, r['a'], lang)} → {format_value(metric, r['b'], lang)}  "
                      f"{str(r['text'] or '')[:90]}"
                      for r in part.to_dict("records")]
    emit(out, args.json, "\n".join(lines))
    return 0


def cmd_export(args: Any) -> int:
    from voproshalych_eval import reports  # heavy: keeps reports out of --help (+1 ms)

    content = reports.run_report(engine(), args.run_id, args.format, lang=output_language(args), part=args.csv_part)
    if args.out:
        path = Path(args.out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        info = {"run_id": args.run_id, "format": args.format, "path": str(path.resolve()),
                "bytes": len(content.encode("utf-8"))}
        emit(info, args.json, f"wrote {info['path']} ({info['bytes']} bytes)")
    elif args.json and args.format != "json":
        emit({"run_id": args.run_id, "format": args.format, "content": content}, True)
    else:
        sys.stdout.write(content if content.endswith("\n") else content + "\n")
    return 0


def cmd_leaderboard(args: Any) -> int:
    lang = output_language(args)
    board = dataset_leaderboard(engine(), args.tier, args.metric, dataset_name=args.dataset, lang=lang)

    def t(ru: str, en: str) -> str:
        return en if lang == "en" else ru

    def num(v: Any, key: str | None) -> str:
        return "—" if v is None or v != v else format_value(key, v, lang)

    lines = [f"{t('рейтинг по', 'ranked by')} {catalog.label(args.metric, lang)} · "
             f"{t('конфигураций', 'configurations')}: {len(board)}",
             f"{'#':>3} {t('значение', 'value'):>10} {'n':>5} {t('стоимость', 'cost'):>10} {t('токены', 'tokens'):>9} "
             f"{'p50':>8} {'p95':>8}  {t('запуск', 'run'):>6}  {t('конфигурация', 'configuration')}"]
    for r in board.to_dict("records"):
        cost = "—" if r["cost_usd"] is None or r["cost_usd"] != r["cost_usd"] else f"${r['cost_usd']:.4f}"
        lat = [("—" if v is None or v != v else format_seconds(v, lang)) for v in (r["latency_p50"], r["latency_p95"])]
        tokens = "—" if r["tokens"] is None or r["tokens"] != r["tokens"] else _count(r["tokens"])
        lines.append(f"{r['rank']:>3} {num(r['value'], args.metric):>10} {_count(r['n']):>5} {cost:>10} {tokens:>9} "
                     f"{lat[0]:>8} {lat[1]:>8}  #{r['run_id']:>5}  {r['config_words']}"
                     + (f" · {t('офлайн', 'offline')}" if r["offline"] else ""))
    emit({"metric": args.metric, "rows": frame_records(board)}, args.json, "\n".join(lines))
    return 0

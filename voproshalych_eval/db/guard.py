"""Read-only access to a source database, enforced by PostgreSQL, with a statement check as second line.

A *source* (the bot's production database, or the demo database) is only ever read. Its connections
(:func:`voproshalych_eval.db.engine.get_source_engine`) are made so that PostgreSQL itself refuses
every write:

1. **Read-only transactions.** Every connection starts with ``default_transaction_read_only=on``
   (a connection option); PostgreSQL then refuses INSERT, UPDATE, DELETE, MERGE, COPY FROM, every
   CREATE / ALTER / DROP, TRUNCATE, GRANT, COMMENT, ``nextval`` and EXPLAIN ANALYZE of those, however
   the statement is spelled (comments, CTEs, ``DO`` blocks, Unicode-escaped identifiers …).
2. **Pinned transactions.** Before each statement, :func:`install_source_guard` asks the server, in
   the same transaction, whether it is read-only (``current_setting('transaction_read_only')``).
   That query takes the transaction's snapshot, after which PostgreSQL no longer lets it become
   read-write (``SET TRANSACTION READ WRITE`` fails); a transaction that is *not* read-only — because
   a statement changed the session default, or ``BEGIN READ WRITE`` was sent after a ``COMMIT`` —
   is refused and its connection discarded.
3. **One statement at a time.** Statements are sent with the extended protocol
   (``prepare_threshold=0``), so PostgreSQL rejects a string with several statements
   (``SELECT 1; COMMIT; BEGIN READ WRITE; DELETE …``).
4. **Second line.** :func:`source_statement_refusal` lets through only statements that begin with
   a reading keyword (``SELECT``, ``WITH`` without a data-modifying part, ``SHOW``, ``VALUES``,
   ``TABLE``, ``EXPLAIN`` without ``ANALYZE``, ``COPY (…) TO STDOUT`` — never to a file or a program) after
   comments are skipped, and that call only functions of :data:`ALLOWED_FUNCTIONS` (aggregates, text,
   hashing, dates, JSON, full-text search, pgvector, catalog formatting). Every other function is refused,
   however it is spelled (``pg_catalog.``-qualified, double-quoted, ``U&"\\0070g_…"`` Unicode escapes):
   ``pg_terminate_backend``, ``pg_sleep``, replication slots, advisory locks, file access, ``dblink`` …
   It is a convenience that gives a clearer message; the promise is PostgreSQL's enforcement above.
5. **Bounded sessions** (:mod:`voproshalych_eval.db.engine`): every source session starts with a
   ``statement_timeout`` and an ``idle_in_transaction_session_timeout``, and a connection returning to
   the pool is reset with ``DISCARD ALL`` (advisory locks, temporary objects, prepared statements and
   session settings never outlive a checkout); the read-only check runs again after the reset.

A database owner can always undo a session setting through a side door the app never uses (e.g. a
``dblink`` connection back to the same server). The guarantee a DBA can give is a login role that is
only granted ``SELECT`` (see the README, "Read-only role"); the app works with such a role as is.
"""

from __future__ import annotations

import re

from sqlalchemy import Engine, event

from voproshalych_eval.db.errors import ProductionWriteError, SourceNotReadOnlyError

#: the connection option every source connection starts with
READ_ONLY_OPTION = "-c default_transaction_read_only=on"
#: the query run before each statement on a source connection (pins the transaction read-only)
READ_ONLY_CHECK = "SELECT current_setting('transaction_read_only')"

_READING_KEYWORDS = {"select", "with", "show", "values", "table", "explain", "copy"}
_MODIFYING_RE = re.compile(r"\b(insert|update|delete|merge|truncate|create|drop|alter|grant|revoke|call|do)\b", re.I)
_ANALYZE_RE = re.compile(r"\banalyze\b|\banalyse\b", re.I)
_SIDE_DOORS_RE = re.compile(
    r"read[\s_]+write|session\s+characteristics|set_config|dblink|lo_(?:import|export|create|unlink)"
    r"|\bfrom\s+stdin\b|\bto\s+program\b|\bfrom\s+program\b|\bnextval\b|\bsetval\b",
    re.I,
)


def _comment_end(sql: str, i: int) -> int:
    """The index just after the comment that starts at ``sql[i]`` (``--`` to the line's end, or a ``/* */``
    block, nested as PostgreSQL nests them)."""
    n = len(sql)
    if sql.startswith("--", i):
        j = sql.find("\n", i)
        return n if j < 0 else j + 1
    depth, i = 1, i + 2
    while i < n and depth:
        if sql.startswith("/*", i):
            depth, i = depth + 1, i + 2
        elif sql.startswith("*/", i):
            depth, i = depth - 1, i + 2
        else:
            i += 1
    return i


def _skip_noise(sql: str) -> str:
    """``sql`` without leading whitespace, comments (``--``, nested ``/* */``) and opening parentheses."""
    i, n = 0, len(sql)
    while i < n:
        if sql[i].isspace() or sql[i] == "(":
            i += 1
        elif sql.startswith(("--", "/*"), i):
            i = _comment_end(sql, i)
        else:
            break
    return sql[i:]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: functions a source statement may call (lower case, schema dropped); everything else is refused
ALLOWED_FUNCTIONS = _words("""
    count sum avg min max string_agg array_agg json_agg jsonb_agg json_object_agg jsonb_object_agg bool_and bool_or
    every stddev stddev_pop stddev_samp variance var_pop var_samp percentile_cont percentile_disc mode
    row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value nth_value
    coalesce nullif greatest least cast extract date_part date_trunc to_char to_date to_timestamp to_number
    now age make_interval justify_interval timezone isfinite
    length char_length character_length octet_length bit_length lower upper initcap trim btrim ltrim rtrim
    substr substring left right replace translate split_part position strpos concat concat_ws format
    regexp_replace regexp_match regexp_matches regexp_split_to_array regexp_split_to_table starts_with repeat
    lpad rpad reverse md5 sha224 sha256 sha384 sha512 encode decode convert_to convert_from to_hex ascii chr
    quote_ident quote_literal quote_nullable
    abs round floor ceil ceiling trunc sign sqrt cbrt exp ln log log10 power pow mod div width_bucket
    array_length array_to_string array_position array_positions array_remove array_cat array_append
    array_prepend cardinality unnest array_dims array_lower array_upper generate_subscripts
    to_json to_jsonb row_to_json array_to_json json_build_object jsonb_build_object json_build_array
    jsonb_build_array json_array_elements jsonb_array_elements json_array_elements_text
    jsonb_array_elements_text json_each jsonb_each json_each_text jsonb_each_text json_extract_path
    jsonb_extract_path json_extract_path_text jsonb_extract_path_text jsonb_typeof json_typeof
    jsonb_array_length json_array_length jsonb_strip_nulls jsonb_pretty
    to_tsvector to_tsquery plainto_tsquery phraseto_tsquery websearch_to_tsquery ts_rank ts_rank_cd
    ts_headline setweight
    vector_dims vector_norm l2_distance cosine_distance inner_product l1_distance l2_normalize
    halfvec_dims subvector binary_quantize vector_send halfvec_send
    current_setting format_type pg_typeof current_schema current_schemas current_database version to_regclass to_regtype to_regnamespace
    obj_description col_description has_table_privilege has_schema_privilege has_column_privilege
    pg_table_is_visible pg_type_is_visible pg_get_expr pg_get_indexdef pg_get_constraintdef
    pg_relation_size pg_total_relation_size pg_table_size pg_indexes_size pg_size_pretty
    text int4 int8 float8 numeric bool
""")

#: words that precede ``(`` without being a function call (keywords, type names with modifiers, COPY options)
_NOT_CALLS = _words("""
    select from where and or not in exists as on using values any all some array row over filter within group
    by order partition having limit offset case when then else end join lateral union intersect except with
    recursive materialized copy to table is distinct between like ilike similar into returning only
    tablesample window rows range groups asc desc nulls first last for of stdout explain
    varchar char character varying numeric decimal float double precision bit timestamp time interval
    vector halfvec sparsevec zone without
""")


def _string_end(sql: str, i: int, backslashes: bool) -> int:
    """Index after the string literal whose opening quote is at ``i``."""
    j, n = i + 1, len(sql)
    while j < n:
        if backslashes and sql[j] == "\\":
            j += 2
            continue
        if sql[j] == "'":
            if j + 1 < n and sql[j + 1] == "'":
                j += 2
                continue
            return j + 1
        j += 1
    return n


def _unicode_ident(body: str, escape: str) -> str | None:
    """A ``U&"…"`` identifier's text (``\\XXXX``, ``\\+XXXXXX`` escapes); None when malformed."""
    out, i, n = [], 0, len(body)
    while i < n:
        c = body[i]
        if c != escape:
            out.append(c)
            i += 1
        elif body.startswith(escape, i + 1):
            out.append(escape)
            i += 2
        elif i + 1 < n and body[i + 1] == "+" and re.fullmatch(r"[0-9A-Fa-f]{6}", body[i + 2:i + 8] or "x"):
            out.append(chr(int(body[i + 2:i + 8], 16)))
            i += 8
        elif re.fullmatch(r"[0-9A-Fa-f]{4}", body[i + 1:i + 5] or "x"):
            out.append(chr(int(body[i + 1:i + 5], 16)))
            i += 5
        else:
            return None
    return "".join(out)


def _tokens(sql: str) -> list[tuple[str, str]]:
    """``(kind, text)`` tokens of ``sql``: ``word`` (lower case), ``ident`` (quoted, decoded), ``str``, ``punct``."""
    toks: list[tuple[str, str]] = []
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if c.isspace():
            i += 1
        elif sql.startswith(("--", "/*"), i):
            i = _comment_end(sql, i)
        elif c == "'":
            i = _string_end(sql, i, False)
            toks.append(("str", ""))
        elif c in "eE" and sql.startswith("'", i + 1):
            i = _string_end(sql, i + 1, True)
            toks.append(("str", ""))
        elif c in "uU" and sql.startswith("&'", i + 1):
            i = _string_end(sql, i + 2, False)
            toks.append(("str", ""))
        elif c == "$" and (m := re.match(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$", sql[i:])):
            end = sql.find(m.group(0), i + len(m.group(0)))
            i = n if end < 0 else end + len(m.group(0))
            toks.append(("str", ""))
        elif c in "uU" and sql.startswith('&"', i + 1) or c == '"':
            start = i + (3 if c != '"' else 1)
            j = start
            while j < n:
                if sql[j] == '"' and sql.startswith('"', j + 1):
                    j += 2
                    continue
                if sql[j] == '"':
                    break
                j += 1
            body = sql[start:j].replace('""', '"')
            i = j + 1
            if c != '"':
                esc = "\\"
                if m := re.match(r"\s*uescape\s*'(.)'", sql[i:], re.I):
                    esc, i = m.group(1), i + m.end()
                decoded = _unicode_ident(body, esc)
                body = decoded if decoded is not None else "\x00malformed"
            toks.append(("ident", body.lower()))
        elif c.isalpha() or c == "_":
            m = re.match(r"[A-Za-z_][A-Za-z0-9_$]*", sql[i:])
            word = m.group(0) if m else c
            toks.append(("word", word.lower()))
            i += len(word)
        else:
            toks.append(("punct", c))
            i += 1
    return toks


def called_functions(sql: str) -> list[str]:
    """Names (lower case, schema dropped) of the functions ``sql`` calls; CTE and alias column lists,
    keywords and type modifiers are not calls."""
    toks = _tokens(sql)
    out: list[str] = []
    for j, (kind, value) in enumerate(toks):
        if kind not in ("word", "ident") or j + 1 >= len(toks) or toks[j + 1] != ("punct", "("):
            continue
        if kind == "word" and value in _NOT_CALLS:
            continue
        prev = toks[j - 1] if j else ("punct", "")
        if prev == ("word", "as") or (prev == ("punct", ":") and j >= 2 and toks[j - 2] == ("punct", ":")):
            continue  # an alias's column list, or a cast's type with a modifier (::varchar(20))
        depth, k = 0, j + 1
        while k < len(toks):
            if toks[k] == ("punct", "("):
                depth += 1
            elif toks[k] == ("punct", ")"):
                depth -= 1
                if depth == 0:
                    break
            k += 1
        after = toks[k + 1:k + 3]
        if after[:1] == [("word", "as")] and after[1:2] and (after[1] == ("punct", "(") or after[1][1] in ("materialized", "not")):
            continue  # a CTE's header: name(columns) AS (…)
        out.append(value)
    return out


def source_statement_refusal(statement: str) -> str | None:
    """Why ``statement`` may not be sent to a source, or None when it reads (the second line of defence)."""
    body = _skip_noise(statement)
    word = re.match(r"[A-Za-z_]+", body)
    keyword = word.group(0).lower() if word else ""
    if keyword not in _READING_KEYWORDS:
        return f"'{keyword or body[:20]}' is not a reading statement"
    if keyword == "with" and _MODIFYING_RE.search(body):
        return "a WITH query with a data-modifying part"
    if keyword == "explain" and _ANALYZE_RE.search(body):
        return "EXPLAIN ANALYZE executes its statement"
    if keyword == "copy" and not re.match(r"copy\s*\(", body, re.I):
        return "COPY of a table (only COPY (SELECT …) TO is reading)"
    if keyword == "copy" and not re.search(r"\)\s*to\s+stdout\b", body, re.I):
        return "COPY to a file or a program (only COPY (SELECT …) TO STDOUT is reading)"
    if _SIDE_DOORS_RE.search(body):
        return "it changes the transaction mode, calls a writing function or reaches outside the database"
    unknown = sorted({f for f in called_functions(body) if f not in ALLOWED_FUNCTIONS})
    if unknown:
        return f"it calls a function outside the allow-list: {', '.join(unknown)}"
    return None


def install_source_guard(engine: Engine, *, text_check: bool = True) -> None:
    """Pin every transaction of ``engine`` read-only before each statement (and refuse non-reading text).

    ``text_check=False`` leaves only PostgreSQL's enforcement (tests that prove it).
    """

    @event.listens_for(engine, "before_cursor_execute", retval=True)
    def _check(conn, cursor, statement, parameters, context, executemany):
        if text_check:
            reason = source_statement_refusal(statement)
            if reason:
                raise ProductionWriteError(
                    f"Refused a statement on the source database: {reason}. Sources (production, demo) "
                    "are only read; the app's own data goes to its store."
                )
        verify_read_only(conn.connection.dbapi_connection, invalidate=conn.invalidate)
        return statement, parameters


def verify_read_only(dbapi_connection, *, invalidate=None) -> None:
    """Run :data:`READ_ONLY_CHECK` in the current transaction; refuse (and discard the connection) if off."""
    value = dbapi_connection.execute(READ_ONLY_CHECK).fetchone()[0]
    if value != "on":
        if invalidate is not None:
            invalidate()
        else:
            dbapi_connection.close()
        raise SourceNotReadOnlyError(
            "The source connection's transaction is not read-only (a statement changed the transaction "
            "mode); the connection was discarded and nothing was sent."
        )

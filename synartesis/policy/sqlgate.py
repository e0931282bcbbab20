"""The ``gate: on_write`` heuristic: does this call's SQL only read? (reference-spec §6.1)

A call passes only when every SQL string is a single read-only statement. Fixed false
negatives of the reference (defect 14): data-modifying CTEs (``WITH d AS (DELETE …) SELECT``),
``EXPLAIN ANALYZE <write>`` (it executes the statement), ``SELECT … INTO`` (creates a table),
and locking reads (``FOR UPDATE``). Side-effecting functions cannot be seen from text; that
limit is documented.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["is_read_only_sql", "should_gate"]

_READ_START = re.compile(r"^(select|with|show|explain|describe|desc|values|table|pragma)\b")
_WRITE_WORDS = re.compile(
    r"\b(insert|update|delete|merge|upsert|create|drop|alter|truncate|grant|revoke|"
    r"attach|detach|vacuum|reindex|call|exec|execute|copy|begin|commit|rollback|"
    r"savepoint|refresh|cluster|notify|listen|nextval|setval)\b")
_INTO = re.compile(r"\binto\b")
_LOCKING = re.compile(r"\bfor\s+(update|share|no\s+key\s+update|key\s+share)\b")
_PRAGMA_WRITE = re.compile(r"^pragma\s+[\w.]+\s*=|^pragma\s+[\w.]+\s*\(")


def _strip(sql: str) -> str:
    """Remove comments and the contents of string literals and quoted identifiers."""
    out: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if sql.startswith("--", i):
            j = sql.find("\n", i)
            i = n if j < 0 else j
            out.append(" ")
        elif sql.startswith("/*", i):
            j = sql.find("*/", i + 2)
            i = n if j < 0 else j + 2
            out.append(" ")
        elif c in ("'", '"', "`"):
            j = i + 1
            while j < n:
                if sql[j] == c:
                    if j + 1 < n and sql[j + 1] == c:  # doubled quote escapes itself
                        j += 2
                        continue
                    break
                j += 1
            out.append(" '' " if c == "'" else ' "" ')
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def is_read_only_sql(sql: str) -> bool:
    """True when ``sql`` is one statement that only reads (see module docstring).

    Quoting this heuristic does not model is treated as a write: ``[bracketed]`` identifiers
    (SQLite, SQL Server), dollar quoting (``$$…$$``, Postgres) and backslash escapes
    (``E'…'``), since a comment marker or quote hidden in them can mask a write.
    """
    if "[" in sql or "$" in sql or "\\" in sql:
        return False
    text = _strip(sql).strip().lower()
    text = re.sub(r";\s*$", "", text)
    if not text or ";" in text:
        return False
    if not _READ_START.match(text):
        return False
    if text.startswith("pragma"):
        return not _PRAGMA_WRITE.match(text)
    body = text
    if body.startswith("explain"):
        rest = re.sub(r"^explain\s*(\([^)]*\))?\s*", "", body)
        if re.match(r"analy[sz]e\b", rest) or re.search(r"\banaly[sz]e\b", body.split(" ", 2)[1] if " " in body else ""):
            # EXPLAIN ANALYZE runs the statement: read-only only if that statement is
            rest = re.sub(r"^analy[sz]e\s*(verbose\s*)?", "", rest)
        body = rest
        if not body:
            return True
    if _WRITE_WORDS.search(body) or _INTO.search(body) or _LOCKING.search(body):
        return False
    return True


def should_gate(args: Any, sql_arg: str | None = None) -> bool:
    """Decide the on_write gate for a call's arguments.

    Args:
        args: the call's arguments.
        sql_arg: the argument that holds SQL (policy ``sql_arg``); None = every top-level
            string must be a read-only statement (reference behaviour).
    Returns:
        True to hold the call for approval.
    """
    if not isinstance(args, dict):
        return True
    if sql_arg is not None:
        value = args.get(sql_arg)
        return not (isinstance(value, str) and is_read_only_sql(value))
    strings = [v for v in args.values() if isinstance(v, str)]
    if not strings:
        return True
    return not all(is_read_only_sql(s) for s in strings)

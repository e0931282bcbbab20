"""Canonical JSON: the one text every sameness comparison and hash is made over.

Keys sorted (code-point order), no insignificant whitespace, non-ASCII kept as UTF-8,
arrays in order. Two values are "the same" for synartesis iff their canonical texts are equal.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["canonical", "canonical_bytes", "sha256_hex", "call_key"]


def canonical(value: Any) -> str:
    """Return the canonical JSON text of ``value`` (a JSON-compatible Python value)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_bytes(value: Any) -> bytes:
    """Canonical JSON as UTF-8 bytes (``surrogatepass`` so lone surrogates never crash)."""
    return canonical(value).encode("utf-8", "surrogatepass")


def sha256_hex(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def call_key(server: str, tool: str, args: Any) -> str:
    """The identity of a call for approvals: SHA-256 over server, tool and canonical args."""
    return sha256_hex(canonical_bytes([server, tool, args]))

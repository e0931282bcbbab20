"""Payloads: arguments, snapshots, results, inverses, post-states and reports, stored once.

A JSON value is stored as a *ref*: its skeleton inline (``=`` + JSON) when small, else a blob.
Every string of 1 KiB or more inside it is its own blob, named by SHA-256 and zlib-compressed
when that is smaller, so the same file text seen as an argument, a post-state and the next
snapshot is one blob. A dict that happens to look like our marker is escaped (``$synartesis.lit``).
"""

from __future__ import annotations

import json
import zlib
from typing import Any, Iterator

from synartesis.canonical import sha256_hex
from synartesis.errors import JournalError
from synartesis.journal.base import JournalBase

__all__ = ["BlobsMixin", "blob_refs"]

_BLOB_MIN = 1024
_ASK_FIRST = 16 * 1024  # smaller blobs are compressed and inserted (ON CONFLICT DO NOTHING) without asking
_INLINE_MAX = 2048
_BLOB_KEY = "$synartesis.blob"
_LIT_KEY = "$synartesis.lit"
# Every column that holds a ref (garbage collection keeps what these point at).
REF_COLUMNS = {"actions": ("args_ref", "snapshot_ref", "result_ref", "inverse_ref", "verify_ref", "post_ref"),
               "undos": ("report_ref",), "shapes": ("ref",)}


def blob_refs(value: Any) -> Iterator[str]:
    """The blob hashes a skeleton points at."""
    if isinstance(value, dict):
        if len(value) == 1 and _BLOB_KEY in value and isinstance(value[_BLOB_KEY], str):
            yield value[_BLOB_KEY]
            return
        for v in value.values():
            yield from blob_refs(v)
    elif isinstance(value, list):
        for v in value:
            yield from blob_refs(v)


class BlobsMixin(JournalBase):
    def _put_blob(self, data: bytes) -> str:
        digest = sha256_hex(data)
        self._tx_blobs.append(digest)
        if digest in self._known_blobs:
            return digest
        if len(data) > _ASK_FIRST and self._one("SELECT 1 FROM blobs WHERE hash = ?", (digest,)):
            return digest  # already stored: spare the compression
        codec, stored = "raw", data
        if len(data) > 128:
            packed = zlib.compress(data, 6)
            if len(packed) < len(data):
                codec, stored = "zlib", packed
        self._q("INSERT INTO blobs (hash, codec, size, data) VALUES (?,?,?,?) ON CONFLICT DO NOTHING",
                (digest, codec, len(data), stored))
        return digest

    def _get_blob(self, digest: str) -> bytes:
        row = self._one("SELECT codec, data FROM blobs WHERE hash = ?", (digest,))
        if row is None:
            raise JournalError(f"the journal at {self.path} is missing payload {digest[:12]}")
        try:
            return zlib.decompress(row[1]) if row[0] == "zlib" else bytes(row[1])
        except zlib.error:
            raise JournalError(f"the journal at {self.path} has a damaged payload {digest[:12]}; "
                               "`synartesis audit` says which action it belongs to") from None

    def _split(self, value: Any) -> Any:
        if isinstance(value, str):
            if len(value) >= _BLOB_MIN:
                return {_BLOB_KEY: self._put_blob(value.encode("utf-8", "surrogatepass"))}
            return value
        if isinstance(value, list):
            return [self._split(v) for v in value]
        if isinstance(value, dict):
            inner = {k: self._split(v) for k, v in value.items()}
            if _BLOB_KEY in value or _LIT_KEY in value:
                return {_LIT_KEY: inner}
            return inner
        return value

    def _join(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self._join(v) for v in value]
        if isinstance(value, dict):
            if len(value) == 1 and _BLOB_KEY in value:
                return self._get_blob(value[_BLOB_KEY]).decode("utf-8", "surrogatepass")
            if len(value) == 1 and _LIT_KEY in value:
                return {k: self._join(v) for k, v in value[_LIT_KEY].items()}
            return {k: self._join(v) for k, v in value.items()}
        return value

    def put_json(self, value: Any) -> str:
        """Store a JSON value; return its ref. Call inside a transaction."""
        split = self._split(value)
        skeleton = json.dumps(split, ensure_ascii=False, separators=(",", ":"))
        try:
            skeleton.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: escaped, so the text stays valid UTF-8
            skeleton = json.dumps(split, ensure_ascii=True, separators=(",", ":"))
        if len(skeleton) <= _INLINE_MAX:
            return "=" + skeleton
        return self._put_blob(skeleton.encode("utf-8", "surrogatepass"))

    def _put_opt(self, value: Any) -> str | None:
        return None if value is None else self.put_json(value)

    def get_json(self, ref: str | None) -> Any:
        """The value stored under ``ref`` (None for None)."""
        if ref is None:
            return None
        with self._guard("read"):
            if ref.startswith("="):
                return self._join(json.loads(ref[1:]))
            return self._join(json.loads(self._get_blob(ref).decode("utf-8", "surrogatepass")))

    def _bad_payload(self, ref: str | None) -> str | None:
        """Why the payload under ``ref`` cannot be trusted (its bytes no longer hash to its
        name, or it is missing), or None."""
        if not ref:
            return None
        refs = [ref]
        while refs:
            r = refs.pop()
            try:
                if r.startswith("="):
                    skeleton = json.loads(r[1:])
                else:
                    data = self._get_blob(r)
                    if sha256_hex(data) != r:
                        return f"stored payload {r[:12]} was altered after it was written"
                    skeleton = json.loads(data) if data[:1] in (b"{", b"[") else None
            except JournalError:
                return f"stored payload {r[:12]} is missing"
            except (ValueError, zlib.error, UnicodeDecodeError):
                return f"stored payload {r[:12]} is unreadable"
            if skeleton is not None:
                refs.extend(blob_refs(skeleton))
        return None

    def _collect_garbage(self) -> None:
        """Delete blobs no ref points at any more (inside a transaction, after a prune)."""
        live: set[str] = set()
        for table, cols in REF_COLUMNS.items():
            for row in self._all(f"SELECT {', '.join(cols)} FROM {table}"):
                live.update(r for r in row if r)
        for (data,) in self._all("SELECT data FROM events WHERE kind IN ('undo.end', 'redo.end', 'saga.end')"):
            ref = json.loads(data).get("report")
            if ref:
                live.add(ref)
        stack = list(live)
        while stack:  # skeletons (inline or blobs) point at string blobs
            ref = stack.pop()
            try:
                skeleton = json.loads(ref[1:] if ref.startswith("=") else self._get_blob(ref))
            except (ValueError, JournalError, UnicodeDecodeError):
                continue
            for inner in blob_refs(skeleton):
                live.add(inner)  # string blobs: nothing further inside
        for (digest,) in self._all("SELECT hash FROM blobs"):
            if digest not in live:
                self._q("DELETE FROM blobs WHERE hash = ?", (digest,))
        self._known_blobs.clear()

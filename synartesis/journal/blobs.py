"""Payloads: arguments, snapshots, results, inverses, post-states and reports, stored once.

A JSON value is stored as a *ref*: its skeleton inline (``=`` + JSON) when small, else a blob.
Every string of 1 KiB or more inside it is its own blob, named by SHA-256 and zlib-compressed
when that is smaller, so the same file text seen as an argument, a post-state and the next
snapshot is one blob. A dict that happens to look like our marker is escaped (``$synartesis.lit``).

Edit series (issue 11 item 6, schema 3): a blob larger than :data:`_CHUNK_MAX` is stored as a
list of content-defined chunks (codec ``chunks``: the chunks' SHA-256 digests, 32 bytes each),
so thirty small edits of one 200 KB file store the few chunks each edit touched, not thirty
copies. Cuts fall at line ends chosen by the line's own bytes (CRC-32 of the line, after at
least :data:`_CHUNK_MIN` bytes; at most :data:`_CHUNK_MAX` bytes per chunk), so an insertion
moves only the cuts next to it. The chunks a blob brings are compressed one by one and written
together as one ``packs`` row (one large row fills SQLite's pages; forty 2 KB rows would waste
a third of them), each located by a ``chunks`` row (pack, offset, length). The whole blob is
still named by the SHA-256 of its whole content: reading it joins the chunks (one query) and
``audit`` re-hashes the joined bytes, so a chunk altered or lost shows as the payload altered
or missing. ``prune`` keeps a pack while any live blob uses one of its chunks.
"""

from __future__ import annotations

import json
import zlib
from hashlib import sha256
from typing import Any, Iterator

from synartesis.canonical import sha256_hex
from synartesis.errors import JournalError
from synartesis.journal.base import JournalBase
from synartesis.journal.rows import new_id

__all__ = ["BlobsMixin", "blob_refs", "chunk_cuts"]

_BLOB_MIN = 1024
_ASK_FIRST = 16 * 1024  # smaller blobs are compressed and inserted (ON CONFLICT DO NOTHING) without asking
_INLINE_MAX = 2048
# Chunking: cuts at line ends whose CRC-32 has its low 5 bits clear (about one line in 32)
# once a chunk holds _CHUNK_MIN bytes; a chunk never exceeds _CHUNK_MAX (a text without line
# ends is cut every _CHUNK_MAX bytes). Measured on 200 KB of prose (scripts/bench/journal_series.py):
# ~5 KB chunks; 1 % edits store ~0.03x of what is written, fresh prose ~0.38x.
_CHUNK_MIN = 2048
_CHUNK_MAX = 16384
_CHUNK_MASK = 31
_DIGEST_LEN = 32
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


def _listing(data: bytes) -> list[str]:
    """The chunk digests (hex) of a ``chunks`` blob's stored list."""
    return [data[k:k + _DIGEST_LEN].hex() for k in range(0, len(data), _DIGEST_LEN)]


def chunk_cuts(data: bytes) -> list[int]:
    """Where ``data`` is cut into content-defined chunks: the end offset of each chunk, the
    last one ``len(data)``. Deterministic across processes and builds (CRC-32, not ``hash``),
    so every proxy on a journal cuts the same text the same way."""
    cuts: list[int] = []
    start = pos = 0
    crc = zlib.crc32
    for line in data.split(b"\n"):
        pos += len(line) + 1
        size = pos - start
        if size >= _CHUNK_MAX or (size >= _CHUNK_MIN and not crc(line) & _CHUNK_MASK):
            while pos - start > _CHUNK_MAX:  # a line longer than a chunk: fixed cuts inside it
                start += _CHUNK_MAX
                cuts.append(start)
            if pos <= len(data):
                cuts.append(pos)
                start = pos
    if start < len(data):
        cuts.append(len(data))
    return cuts


class BlobsMixin(JournalBase):
    def _put_blob(self, data: bytes) -> str:
        digest = sha256_hex(data)
        self._tx_blobs.append(digest)
        if digest in self._known_blobs:
            return digest
        if len(data) > _ASK_FIRST and self._one("SELECT 1 FROM blobs WHERE hash = ?", (digest,)):
            return digest  # already stored: spare the compression
        if len(data) > _CHUNK_MAX:
            cuts = chunk_cuts(data)
            if len(cuts) > 1:
                self._put_chunked(digest, data, cuts)
                return digest
        self._store(digest, data)
        return digest

    def _store(self, digest: str, data: bytes) -> None:
        codec, stored = "raw", data
        if len(data) > 128:
            packed = zlib.compress(data, 6)
            if len(packed) < len(data):
                codec, stored = "zlib", packed
        self._q("INSERT INTO blobs (hash, codec, size, data) VALUES (?,?,?,?) ON CONFLICT DO NOTHING",
                (digest, codec, len(data), stored))

    def _put_chunked(self, digest: str, data: bytes, cuts: list[int]) -> None:
        """Store ``data`` as its chunk list; the chunks not stored yet go into one new pack."""
        names: list[str] = []
        pieces: dict[str, bytes] = {}
        start = 0
        for end in cuts:
            piece = data[start:end]
            h = sha256(piece).hexdigest()
            names.append(h)
            pieces.setdefault(h, piece)
            start = end
        wanted = sorted(set(names))
        for k in range(0, len(wanted), 500):
            part = wanted[k:k + 500]
            for (h,) in self._all(f"SELECT hash FROM chunks WHERE hash IN ({','.join('?' * len(part))})", tuple(part)):
                pieces.pop(h, None)
        if pieces:
            packed, rows, offset = [], [], 0
            for h, piece in pieces.items():
                codec, stored = "raw", piece
                z = zlib.compress(piece, 6)
                if len(z) < len(piece):
                    codec, stored = "zlib", z
                packed.append(stored)
                rows.append((h, digest, offset, len(stored), codec, len(piece)))
                offset += len(stored)
            pack = new_id()  # not the blob's name: a pack kept by prune outlives its blob
            rows = [(h, pack, *rest) for h, _, *rest in rows]
            self._q("INSERT INTO packs (id, data) VALUES (?,?)", (pack, b"".join(packed)))
            self.db.executemany("INSERT INTO chunks (hash, pack, start, length, codec, size) "
                                "VALUES (?,?,?,?,?,?) ON CONFLICT DO NOTHING", rows)
        self._q("INSERT INTO blobs (hash, codec, size, data) VALUES (?,?,?,?) ON CONFLICT DO NOTHING",
                (digest, "chunks", len(data), b"".join(bytes.fromhex(h) for h in names)))

    def _get_blob(self, digest: str) -> bytes:
        row = self._one("SELECT codec, data FROM blobs WHERE hash = ?", (digest,))
        if row is None:
            raise JournalError(f"the journal at {self.path} is missing payload {digest[:12]}")
        if row[0] == "chunks":
            return self._join_chunks(digest, bytes(row[1]))
        return self._unpack(digest, row[0], row[1])

    def _unpack(self, digest: str, codec: str, data: bytes) -> bytes:
        try:
            return zlib.decompress(data) if codec == "zlib" else bytes(data)
        except zlib.error:
            raise JournalError(f"the journal at {self.path} has a damaged payload {digest[:12]}; "
                               "`synartesis audit` says which action it belongs to") from None

    def _join_chunks(self, digest: str, listing: bytes) -> bytes:
        names = _listing(listing)
        found: dict[str, bytes] = {}
        unique = sorted(set(names))
        for k in range(0, len(unique), 500):
            part = unique[k:k + 500]
            for h, codec, data in self._all(
                    "SELECT c.hash, c.codec, substr(p.data, c.start + 1, c.length) FROM chunks c "
                    f"JOIN packs p ON p.id = c.pack WHERE c.hash IN ({','.join('?' * len(part))})", tuple(part)):
                found[h] = self._unpack(digest, codec, data)
        try:
            return b"".join(found[h] for h in names)
        except KeyError:
            raise JournalError(f"the journal at {self.path} is missing part of payload {digest[:12]}") from None

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
        chunks: set[str] = set()
        for digest, listing in self._all("SELECT hash, data FROM blobs WHERE codec = 'chunks'"):
            if digest in live:  # a chunked blob keeps its chunks, and they their packs
                chunks.update(_listing(bytes(listing)))
        for (digest,) in self._all("SELECT hash FROM blobs"):
            if digest not in live:
                self._q("DELETE FROM blobs WHERE hash = ?", (digest,))
        packs: set[str] = set()
        for h, pack in self._all("SELECT hash, pack FROM chunks"):
            if h in chunks:
                packs.add(pack)
            else:
                self._q("DELETE FROM chunks WHERE hash = ?", (h,))
        for (pack,) in self._all("SELECT id FROM packs"):
            if pack not in packs:  # a pack goes when none of its chunks is used any more
                self._q("DELETE FROM packs WHERE id = ?", (pack,))
        self._known_blobs.clear()

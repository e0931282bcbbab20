#!/usr/bin/env python3
"""Reading payloads back from an edit series (issue 11 item 6): 200 versions of one 200 KB file,
each about 1 % changed, stored through the journal as a write's arguments and snapshot; then every
version read back the way undo reads a snapshot (``get_json``), newest first on one connection
(as undo walks), then each on its own (nothing inflated before it). Chunked (this build) against the
same series stored whole (chunking off), in one run. Prints ms per read (median) and bytes stored.

    python scripts/bench/blob_chain.py [--n 200] [--size 204800]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from journal_series import series  # noqa: E402

from synartesis.journal import Journal, blobs  # noqa: E402


def one(versions: list[str], whole: bool) -> dict:
    saved = blobs._CHUNK_MAX
    if whole:
        blobs._CHUNK_MAX = 1 << 40  # nothing is large enough to be chunked
    try:
        path = Path(tempfile.mkdtemp(prefix="blob-chain-")) / "j" / "journal.db"
        j = Journal.open(path, create=True)
        run = j.begin_run("chain", {})
        t0 = time.perf_counter()
        refs = [j.record_action(run, "fs", "write_file", "reversible", None, {"path": "p", "content": v},
                                prior="captured", snapshot={"content": v}).snapshot_ref for v in versions]
        put_ms = (time.perf_counter() - t0) * 1000 / len(versions)
        reads, cold = [], []
        for ref, v in zip(reversed(refs), reversed(versions)):  # newest first, as undo walks
            t = time.perf_counter()
            got = j.get_json(ref)["content"]
            reads.append((time.perf_counter() - t) * 1000)
            assert got == v
        for ref in reversed(refs):  # each read on its own: nothing inflated before
            j.__dict__.pop("_pack_cache", None)
            j.__dict__.pop("_chunk_places", None)  # schema 4: where each chunk is
            t = time.perf_counter()
            j.get_json(ref)
            cold.append((time.perf_counter() - t) * 1000)
        stored = sum(r[0] or 0 for r in j.conn.execute(
            "SELECT sum(length(data)) FROM blobs UNION ALL SELECT sum(length(data)) FROM packs"))
        j.close()
        return {"read_ms_p50": statistics.median(reads), "read_ms_max": max(reads), "record_ms": put_ms,
                "cold_ms_p50": statistics.median(cold),
                "stored": stored}
    finally:
        blobs._CHUNK_MAX = saved


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--size", type=int, default=200 * 1024)
    args = ap.parse_args()
    versions = series("edits", args.n, args.size)
    written = sum(len(v) for v in versions)
    for label, whole in (("whole", True), ("chunked", False)):
        r = one(versions, whole)
        print(f"{label:<8} {args.n} versions x {args.size:,} B: read back p50 {r['read_ms_p50']:.2f} ms "
              f"(max {r['read_ms_max']:.2f}; each alone {r['cold_ms_p50']:.2f}), record {r['record_ms']:.2f} ms, payloads stored "
              f"{r['stored']:,} B = {r['stored'] / written:.3f}x of written", flush=True)


if __name__ == "__main__":
    main()

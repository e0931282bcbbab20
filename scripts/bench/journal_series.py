#!/usr/bin/env python3
"""Journal growth for two write patterns through a proxy (issue 11's journal rows).

- ``fresh``: N writes of SIZE bytes of fresh prose to one file (every write a new text).
- ``edits``: N small edits of one SIZE-byte file: each write changes about 1 % of the text
  (one run of SIZE/100 bytes at a different place), the way an agent edits a document.

For each: a fresh journal, one session, the writes, the session closed; then the journal's
bytes on disk (db + -wal + -shm) over the bytes written. Prints one line per pattern; JSON to
--out. Standard library only (uses mcpbench's Session).

    python journal_series.py --cmd 'LABEL=COMMAND with {journal} and {workdir}' --workdir W --journal J
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mcpbench import Session, argv_of, fresh_journal, is_tool_error, journal_bytes  # noqa: E402

_WORDS = ("agent undo journal proxy server write edit file record state restore drift policy gate call "
          "answer client review person approve deny prose line text change small large").split()


def prose(size: int, seed: int) -> str:
    """``size`` bytes of ASCII prose, different for every seed (so zlib cannot see a repeat)."""
    rng = random.Random(seed)
    out, n = [], 0
    while n < size:
        line = " ".join(rng.choice(_WORDS) + str(rng.randrange(1000)) for _ in range(10)) + "\n"
        out.append(line)
        n += len(line)
    return "".join(out)[:size]


def series(pattern: str, n: int, size: int) -> list[str]:
    """The N contents written, in order."""
    if pattern == "fresh":
        return [prose(size, 1000 + i) for i in range(n)]
    text = prose(size, 7)
    rng = random.Random(11)
    out = []
    run = max(1, size // 100)
    for i in range(n):
        at = rng.randrange(0, size - run)
        text = text[:at] + prose(run, 5000 + i) + text[at + run:]
        out.append(text)
    return out


def one(label: str, cmd: str, pattern: str, args) -> dict:
    fresh_journal(args.journal)
    path = os.path.join(args.workdir, f"series-{pattern}.txt")
    with open(path, "w") as f:
        f.write(prose(args.size, 3) if pattern == "fresh" else series("edits", 1, args.size)[0])
    s = Session(argv_of(cmd, args))
    s.initialize()
    written = errors = 0
    for content in series(pattern, args.n, args.size):
        r = s.call_tool("write_file", {"path": path, "content": content})
        errors += bool(is_tool_error(r))
        written += len(content.encode())
    s.close()
    grown = journal_bytes(args.journal)["total"]
    ok = open(path).read() == content
    return {"label": label, "pattern": pattern, "writes": args.n, "size": args.size, "written": written,
            "journal_bytes": grown, "ratio": grown / written, "payload_bytes": payload_bytes(args.journal),
            "errors": errors, "final_content_ok": ok}


def payload_bytes(journal: str) -> int | None:
    """Bytes of the payload store alone (blobs, and chunk packs where the schema has them):
    what item 6 changes, without the journal's fixed pages and each action's row and events."""
    import sqlite3
    try:
        db = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        total = sum(db.execute(f"SELECT COALESCE(sum(length(data)), 0) FROM {t}").fetchone()[0]
                    for t in ("blobs", "packs") if t in tables)
        db.close()
        return total
    except sqlite3.Error:
        return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cmd", action="append", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--journal", required=True)
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--size", type=int, default=200 * 1024)
    ap.add_argument("--patterns", default="fresh,edits")
    ap.add_argument("--out")
    args = ap.parse_args()
    results = []
    for spec in args.cmd:
        label, cmd = spec.split("=", 1)
        for pattern in args.patterns.split(","):
            r = one(label, cmd, pattern, args)
            results.append(r)
            print(f"{label:<12} {pattern:<6} {r['writes']} x {r['size']:,} B: journal {r['journal_bytes']:,} B = "
                  f"{r['ratio']:.3f}x of {r['written']:,} B written; payloads "
                  f"{(r['payload_bytes'] or 0) / r['written']:.3f}x (errors {r['errors']}, final ok {r['final_content_ok']})",
                  flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()

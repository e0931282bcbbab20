"""Adversarial review, round 3 — crash-traceback: `synartesis prune --yes` of one run dies (zlib.error / ValueError) when a
run it keeps has a damaged schema-4 chunk list; _collect_garbage decodes every live listing
without a guard."""
import sys

import helpers
import pytest
from test_blobs import _edits, _write_series

from synartesis.journal import Journal


def cli(*args, timeout=60):
    """The synartesis CLI of this checkout: (rc, stdout, stderr)."""
    p = helpers.run([sys.executable, "-m", "synartesis", *args], capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr



@pytest.mark.parametrize("listing", [b"\x00\x11\x22\x33", __import__("zlib").compress(b"abc")],
                         ids=["not-zlib", "not-int64s"])
def test_prune_of_another_run_survives_a_damaged_chunk_list_in_a_kept_run(tmp_path, listing):
    path = tmp_path / "j.db"
    j = Journal.open(path, create=True)
    keep, gone = j.begin_run("keep", {}), j.begin_run("gone", {})
    _write_series(j, keep, _edits(1, size=60_000))
    _write_series(j, gone, _edits(1, size=50_000))
    j.end_run(keep)
    j.end_run(gone)
    kept_listing = j.conn.execute(
        "SELECT b.hash FROM blobs b WHERE codec = 'chunkids' AND size = 60000").fetchone()[0]
    j.conn.execute("UPDATE blobs SET data = ? WHERE hash = ?", (listing, kept_listing))
    j.conn.commit()
    j.close()
    rc, out, err = cli("prune", "--journal", str(path), "--yes", gone)
    assert "Traceback" not in err, err[-600:]
    assert rc in (0, 1, 2)

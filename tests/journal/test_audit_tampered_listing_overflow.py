"""Adversarial review, round 3 — crash-traceback: `synartesis audit` (and `show`) dies with OverflowError on a chunk list whose row numbers
do not fit SQLite's integer (a tampered schema-4 `chunkids` blob)."""
import sys
import zlib
from array import array

import helpers
from test_blobs import _edits, _write_series

from synartesis.journal import Journal


def cli(*args, timeout=60):
    """The synartesis CLI of this checkout: (rc, stdout, stderr)."""
    p = helpers.run([sys.executable, "-m", "synartesis", *args], capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def _tampered(tmp_path):
    """A journal whose one chunk list names numbers past SQL's BIGINT; (path, run)."""
    path = tmp_path / "j.db"
    j = Journal.open(path, create=True)
    run = j.begin_run("t", {})
    _write_series(j, run, _edits(1))
    j.end_run(run)
    bad = zlib.compress(array("q", [2 ** 62] * 3).tobytes())  # deltas summing past 2**63
    j.conn.execute("UPDATE blobs SET data = ? WHERE codec = 'chunkids'", (bad,))
    j.conn.commit()
    j.close()
    return path, run


def test_audit_reports_a_chunk_list_with_out_of_range_numbers_as_altered_not_a_traceback(tmp_path):
    path, _ = _tampered(tmp_path)
    rc, out, err = cli("audit", "--journal", str(path))
    assert "Traceback" not in err, err[-600:]
    assert rc == 1 and ("altered" in out + err or "unreadable" in out + err or "missing" in out + err)


def test_show_of_a_run_with_an_out_of_range_chunk_list_names_the_damage_not_a_traceback(tmp_path):
    path, run = _tampered(tmp_path)
    _, out, err = cli("show", run, "--journal", str(path))
    assert "Traceback" not in err and "OverflowError" not in out + err, (out + err)[-600:]

"""Adversarial review, round 3 — crash-traceback: `synartesis audit` dies on rows whose type was changed with sqlite3: a pack
(schema 4) or blob whose data is TEXT (TypeError in zlib), and an event whose data is valid JSON
but not an object (AttributeError/TypeError; this one predates today: df7aeaf too)."""
import sys

import helpers
import pytest
from test_blobs import _edits, _write_series

from synartesis.journal import Journal


def cli(*args, timeout=60):
    """The synartesis CLI of this checkout: (rc, stdout, stderr)."""
    p = helpers.run([sys.executable, "-m", "synartesis", *args], capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr



@pytest.mark.parametrize("edit", [
    "UPDATE packs SET data = 'plain text'",
    "UPDATE blobs SET data = 'plain text' WHERE codec = 'zlib'",
    "UPDATE events SET data = '[1]' WHERE kind = 'run.begin'",
    "UPDATE events SET data = 'null' WHERE id = (SELECT max(id) FROM events)",
    "UPDATE events SET data = '5' WHERE kind = 'run.begin'",
    # review 9: `||` retypes a blob as TEXT that is not UTF-8, which sqlite3 cannot even fetch
    "UPDATE blobs SET data = data || x'00ff'",
], ids=["pack-text", "blob-text", "event-array", "event-null", "begin-number", "blob-not-utf8"])
def test_audit_reports_a_retyped_row_as_altered_and_never_a_traceback(tmp_path, edit):
    path = tmp_path / "j.db"
    j = Journal.open(path, create=True)
    run = j.begin_run("t", {})
    _write_series(j, run, _edits(1))
    j.record_action(run, "s", "t", "readonly", None, {"x": "compressible " * 300})
    j.end_run(run)
    j.conn.execute(edit)
    j.conn.commit()
    j.close()
    rc, out, err = cli("audit", "--journal", str(path))
    assert "Traceback" not in err, err[-400:]
    assert rc == 1, (rc, out, err)

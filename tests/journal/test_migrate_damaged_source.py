"""Adversarial review, round 3 — crash-traceback: `synartesis journal migrate` of a journal with a damaged chunk list (not
zlib, or naming a chunk row that is gone) dies in remap_listing with zlib.error / KeyError. The
same copy_journal ships spools (ship_spool catches only JournalError)."""
import sys

import helpers
import pytest
from test_blobs import _edits, _write_series

from synartesis.journal import Journal


def cli(*args, timeout=60):
    """The synartesis CLI of this checkout: (rc, stdout, stderr)."""
    p = helpers.run([sys.executable, "-m", "synartesis", *args], capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr



@pytest.mark.parametrize("edit", ["UPDATE blobs SET data = x'00112233' WHERE codec = 'chunkids'",
                                  "DELETE FROM chunks WHERE id = (SELECT min(id) FROM chunks)"],
                         ids=["listing-not-zlib", "chunk-row-gone"])
def test_migrate_of_a_damaged_journal_names_the_damage_instead_of_a_traceback(tmp_path, edit):
    path = tmp_path / "j.db"
    j = Journal.open(path, create=True)
    run = j.begin_run("t", {})
    _write_series(j, run, _edits(1))
    j.end_run(run)
    j.conn.execute(edit)
    j.conn.commit()
    j.close()
    rc, out, err = cli("journal", "migrate", "--journal", str(path), "--to", str(tmp_path / "copy.db"))
    assert "Traceback" not in err, err[-400:]
    assert rc in (1, 2), (rc, out, err)

"""A new user's round 31, #9b: a drift halt listed "reverted since by an undo: 8775d4f5:1 … that
undo put back an older state over what is expected here", although that undo had put back exactly
the expected value (a person's edit after it was the drift). The line now says what that undo put
back: the state expected here (so the change came after it), or an older one over it, as the
journal's captured states tell. Real proxy, real filesystem server."""

from __future__ import annotations

from helpers import cli, two_sessions_writing


def _two_sessions(tmp_path, fs_server, second: str = "B"):
    return two_sessions_writing(tmp_path, fs_server, ("A", second))


def test_a_drift_after_an_undo_that_put_back_the_expected_state_does_not_blame_that_undo(tmp_path, fs_server):
    doc, flags = _two_sessions(tmp_path, fs_server)
    assert cli("undo", "sb", *flags).returncode == 0 and doc.read_text() == "A"  # exactly what sa left
    doc.write_text("a person's edit")  # the drift comes after that undo
    halted = cli("undo", "sa", *flags)
    text = " ".join(halted.stdout.split())
    assert halted.returncode == 1 and "drift" in text, halted.stdout + halted.stderr
    assert "reverted since by an undo" in text and "write_file of session" in text, halted.stdout
    assert "put back an older state over what is expected here" not in text, halted.stdout
    assert "put back exactly the state expected here" in text, halted.stdout
    assert doc.read_text() == "a person's edit"


def test_a_drift_left_by_an_undo_that_put_back_an_older_state_still_says_so(tmp_path, fs_server):
    # sa wrote A, sb wrote B; sa was undone with --force --yes (base, over sb's B): that undo is
    # what left the file as it is, an older state over the B that sb's undo expects
    doc, flags = _two_sessions(tmp_path, fs_server)
    assert cli("undo", "sa", "--force", "--yes", *flags).returncode == 0 and doc.read_text() == "base"
    halted = cli("undo", "sb", *flags)
    text = " ".join(halted.stdout.split())
    assert halted.returncode == 1 and "drift" in text, halted.stdout + halted.stderr
    assert "reverted since by an undo" in text and "put back an older state over what is expected here" in text, \
        halted.stdout
    assert "exactly the state expected here" not in text, halted.stdout
    assert doc.read_text() == "base"

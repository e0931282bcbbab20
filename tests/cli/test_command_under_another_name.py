"""A new user's finding (round 22, #10): `synartesis log` was answered "Did you mean 'login',
'logout'?". A word that names a command under another name says where to look, exit 2."""

from __future__ import annotations

import helpers


def test_log_and_rollback_say_which_commands_to_use(tmp_path):
    for word, names in (("log", ("synartesis show", "synartesis list", "synartesis history")),
                        ("rollback", ("synartesis undo", "--dry-run"))):
        p = helpers.cli(word)
        assert p.returncode == 2, (word, p.returncode, p.stderr)
        assert "login" not in p.stderr and "Traceback" not in p.stderr, p.stderr
        assert all(n in p.stderr for n in names), p.stderr
    assert helpers.cli("logs").returncode == 2

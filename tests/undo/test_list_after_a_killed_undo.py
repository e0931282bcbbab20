"""Adversarial review 16, F12: after an undo was killed part-way (it had reverted and claimed
some writes), `list` said the run was `complete`, as if it were as the agent left it; only
`show` and `history` told. A run some of whose actions an undo reverted, or was reverting, and
that no undo finished reads `partial`."""

from __future__ import annotations

import json
import signal
import sys

from helpers import cli, run
from test_undo_claims_ahead import _KILLED_AFTER_CLAIM, _three_writes


def test_list_says_partial_after_an_undo_was_killed_part_way(tmp_path, fs_server):
    path, journal = _three_writes(tmp_path, fs_server)
    flags = ["--manifest", str(tmp_path / "synartesis.yaml"), "--journal", str(journal)]
    killed = run([sys.executable, "-c", _KILLED_AFTER_CLAIM, "undo", *flags], capture_output=True, text=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    listed = cli("list", "--runs", "--json", *flags)
    [row] = json.loads(listed.stdout)
    assert row["statusText"] == "partial", row
    [session] = json.loads(cli("list", "--json", *flags).stdout)
    assert session["statusText"] == "partial", session
    assert cli("undo", *flags).returncode == 0
    [row] = json.loads(cli("list", "--runs", "--json", *flags).stdout)
    assert row["statusText"] == "rolled_back", row

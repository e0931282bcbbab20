"""A new user's finding (round 15, #8): `undo --yes`, typed as `prune --yes` and `install --yes`
are, was a usage error (exit 2, "--yes goes with --force"). Undo and redo never ask, so `--yes`
alone is accepted and changes nothing: the undo runs as it would without it, and a drift halt
still halts (only `--force --yes` overwrites)."""

from __future__ import annotations

from helpers import cli, files_run


def test_undo_and_redo_accept_yes_alone(tmp_path, fs_server):
    root, flags = files_run(tmp_path, fs_server, {"a.txt": "before\n"},
                            [("write_file", {"path": "{root}/a.txt", "content": "agent\n"})])
    done = cli("undo", "--yes", *flags)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (root / "a.txt").read_text() == "before\n"
    again = cli("redo", "-y", *flags)
    assert again.returncode == 0, again.stdout + again.stderr
    assert (root / "a.txt").read_text() == "agent\n"


def test_yes_alone_does_not_step_over_drift(tmp_path, fs_server):
    root, flags = files_run(tmp_path, fs_server, {"a.txt": "before\n"},
                            [("write_file", {"path": "{root}/a.txt", "content": "agent\n"})])
    (root / "a.txt").write_text("a person's edit\n")
    halted = cli("undo", "--yes", *flags)
    assert halted.returncode == 1 and "drift" in halted.stdout.lower(), halted.stdout + halted.stderr
    assert (root / "a.txt").read_text() == "a person's edit\n"

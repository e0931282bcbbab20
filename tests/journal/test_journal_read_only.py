"""Adversarial review 19, F15: a journal on a read-only mount could not be listed or audited,
and the commands said "could not be opened" with exit 1 (refused or halted). SQLite writes a
WAL journal's -wal and -shm even to read it: a read-only place is a configuration error (exit
2) that says so and what to do. Needs a read-only bind mount (root, and a kernel that allows
it); skipped where one cannot be made."""

from __future__ import annotations

import subprocess

import pytest
from helpers import cli

from synartesis.journal import Journal


def test_a_journal_on_a_read_only_mount_is_a_configuration_error_that_says_why(tmp_path):
    src, ro = tmp_path / "src", tmp_path / "ro"
    src.mkdir()
    ro.mkdir()
    with Journal.open(src / "j.db", create=True) as j:
        j.begin_run("t", {})
    made = subprocess.run(["mount", "--bind", str(src), str(ro)], capture_output=True)
    if made.returncode != 0:
        pytest.skip("no bind mount here: " + made.stderr.decode(errors="replace").strip())
    try:
        if subprocess.run(["mount", "-o", "remount,bind,ro", str(ro)], capture_output=True).returncode != 0:
            pytest.skip("no read-only remount here")
        for command in ("list", "audit"):
            done = cli(command, "--journal", str(ro / "j.db"))
            assert done.returncode == 2, (command, done.stdout, done.stderr)
            assert "read-only" in done.stderr and "Traceback" not in done.stderr, done.stderr
    finally:
        subprocess.run(["umount", str(ro)], capture_output=True, timeout=30)

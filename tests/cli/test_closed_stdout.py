"""A new user's finding (round 6): `synartesis watch --once | head -1` exited 1, a broken pipe
(rich and typer both turn one into exit 1). A closed stdout is no failure: a command cut short
while printing ends quietly with exit 0; an undo, which prints after its work, keeps the exit
code that says how it ended. Real filesystem server, real proxy; stdout is a pipe whose read
end is closed before the command writes anything, so every write meets it closed."""

from __future__ import annotations

import subprocess

import pytest
from helpers import FS_POLICY, files_run, spawn, synartesis_argv


def _closed_stdout(*args: str) -> tuple[int, str]:
    """Run the CLI with its stdout's reader gone; (exit code, stderr)."""
    p = spawn(synartesis_argv(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout is not None and p.stderr is not None
    p.stdout.close()
    err = p.stderr.read().decode("utf-8", "replace")
    return p.wait(60), err


@pytest.fixture
def journal_flags(tmp_path, fs_server) -> list[str]:
    _, flags = files_run(tmp_path, fs_server, {"a.txt": "one\n"},
                         [("write_file", {"path": "{root}/a.txt", "content": "two\n"}),
                          ("read_text_file", {"path": "{root}/a.txt"})], policy=FS_POLICY)
    return flags


@pytest.mark.parametrize("command", [["watch", "--once"], ["history"], ["list"], ["list", "--runs"], ["show"],
                                     ["list", "--json"], ["gates", "--no-read"], []])
def test_a_printing_command_whose_reader_is_gone_ends_quietly_with_exit_0(journal_flags, command):
    code, err = _closed_stdout(*command, *journal_flags)
    assert (code, err) == (0, ""), (command, code, err)


def test_an_undo_whose_reader_is_gone_still_exits_with_its_outcome(journal_flags):
    assert _closed_stdout("undo", "--dry-run", *journal_flags) == (0, "")
    assert _closed_stdout("undo", *journal_flags) == (0, "")
    code, err = _closed_stdout("undo", "--dry-run", *journal_flags)  # nothing left: exit 1, said on stdout
    assert (code, err) == (1, "")

"""--help names each value (new user round 14: `pin --help` showed `<list[str]>` and `<str>`,
Python's types, where a user reads what to type)."""

from __future__ import annotations

import os
import re

import pytest

from helpers import cli


@pytest.mark.parametrize("command", [[], ["pin"], ["show"], ["prune"], ["undo"], ["init"], ["login"], ["team", "add"]])
def test_help_shows_no_python_type_and_no_value_for_a_flag(tmp_path, command):
    env = {**os.environ, "COLUMNS": "120", "HOME": str(tmp_path)}
    out = cli(*command, "--help", env=env).stdout
    assert not re.search(r"<(str|int|float|list\[str\])>", out), out
    for flag in ("--json", "--write", "--dry-run", "--live"):
        line = next((ln for ln in out.splitlines() if f" {flag} " in ln), None)
        if line is not None:
            assert not re.search(rf"{flag}\s+[A-Z_]{{2,}}\s", line), line  # a flag takes no value
    if command == ["pin"]:
        assert re.search(r"--server\s+NAME\s", out) and re.search(r"--manifest\s+FILE\s", out), out
    if command == ["undo"]:
        assert re.search(r"--only\s+SEQ\s", out) and re.search(r"\bTARGET\b", out), out


def test_prune_help_says_what_older_than_0_means(tmp_path):
    """`prune --older-than 0` deletes every run prune may delete; its help said only "more than
    DAYS ago" (new user round 15, #10)."""
    env = {**os.environ, "COLUMNS": "200", "HOME": str(tmp_path)}
    out = cli("prune", "--help", env=env).stdout
    assert "0: every run prune may delete" in out, out


def test_no_help_text_carries_an_internal_note(tmp_path):
    """`console --help` showed "(new user round 11: `console` said "No such command")", a note
    for the project's own history (new user round 31, 9a). No command's help (docstring, option
    and argument help) may name a round, a review or an issue."""
    import typer

    from synartesis.cli import app as cli_app
    cli_app._load_commands([])
    cli_app._reflow_help(cli_app.app)
    root = typer.main.get_command(cli_app.app)
    internal = re.compile(r"new user|round \d|review \d|adversarial|issue \d|\bF\d+\b", re.I)
    found = []

    def walk(cmd, path):
        texts = [cmd.help or "", cmd.short_help or ""] + [getattr(p, "help", None) or "" for p in cmd.params]
        found.extend(f"{' '.join(path)}: {t}" for t in texts if internal.search(t))
        for name, sub in (getattr(cmd, "commands", None) or {}).items():
            walk(sub, [*path, name])
    walk(root, ["synartesis"])
    assert found == [], found
    from synartesis.proxy.main import USAGE
    assert not internal.search(USAGE), USAGE

"""A new user's round 31, 10c: `check` printed "!" lines (an unset `${VAR}`, tools no rule
covers) and then "No problems found.", exit 0. It now ends "N warnings (the ! lines above), no
problems.", still exit 0 (a warning is no problem: README). Real filesystem server."""

from __future__ import annotations

import json
import os

from helpers import cli


def test_check_with_warnings_counts_them_and_does_not_say_no_problems_found(tmp_path, fs_server):
    root = tmp_path / "root"
    root.mkdir()
    policy = tmp_path / "synartesis.yaml"
    policy.write_text("version: 1\nservers:\n  files:\n"
                      f"    command: {json.dumps(fs_server[0])}\n    args: {json.dumps([*fs_server[1:], str(root)])}\n"
                      "    env: {UNSET_HERE: \"${SYNARTESIS_ROUND31_UNSET}\"}\n"
                      "tools:\n  - {match: \"files.read_*\", class: readonly}\n")
    env = {k: v for k, v in os.environ.items() if k != "SYNARTESIS_ROUND31_UNSET"}
    res = cli("check", "--manifest", str(policy), env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    bangs = [line for line in res.stdout.splitlines() if line.lstrip().startswith("! ")]
    assert len(bangs) >= 2, res.stdout  # the unset variable and the tools no rule covers
    assert "No problems found." not in res.stdout, res.stdout
    last = res.stdout.strip().splitlines()[-1]
    assert last == f"{len(bangs)} warnings (the ! lines above), no problems.", res.stdout

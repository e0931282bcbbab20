"""A new user's round 31, 9d: `undo RUN --only --dry-run` took `--dry-run` as --only's value
and said "Input should be a valid integer", not that --only was given no value. An option that
takes a value, followed by another of the command's options, is named as such (exit 2)."""

from __future__ import annotations

import helpers


def test_an_option_whose_value_is_another_option_says_it_has_no_value(tmp_path):
    jp = tmp_path / "none.db"
    p = helpers.cli("undo", "1e1983ae", "--only", "--dry-run", "--journal", str(jp))
    assert p.returncode == 2, p.stderr
    assert "synartesis: --only needs a value (SEQ), and what follows it is the option --dry-run" in p.stderr, p.stderr
    assert "valid integer" not in p.stderr and "Traceback" not in p.stderr, p.stderr
    q = helpers.cli("history", "--by", "--json", "--journal", str(jp))
    assert q.returncode == 2 and "--by needs a value (WHO), and what follows it is the option --json" in q.stderr, q.stderr
    # a value that merely starts with a dash, and the options after `--`, are left to the command
    r = helpers.cli("deny", "--reason", "-", "--journal", str(jp))
    assert "needs a value" not in r.stderr, r.stderr

"""What a new user following the README ran into: an undo report's own line breaks printed as
``\\n``, and a ``postgresql://`` journal without psycopg dying with a traceback."""

from __future__ import annotations

import os
import sys

from helpers import run


def test_an_undo_reports_own_line_breaks_are_printed_as_line_breaks(capsys, monkeypatch):
    from synartesis.cli.undo_cmds import _Report
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)
    out = _Report()
    out.print("\n  picked session [bold]s-1[/]: evil\\x1b[2K")  # the data as shown() leaves it
    out.print("\n  R E S U L T  nothing undone\n")
    out.close()
    text = capsys.readouterr().out
    assert text == "\n  picked session s-1: evil\\x1b[2K\n\n  R E S U L T  nothing undone\n\n"
    assert "\\n" not in text


def test_a_postgresql_journal_without_psycopg_is_a_usage_error_not_a_traceback(tmp_path):
    # psycopg made unimportable for this process only (None in sys.modules: ModuleNotFoundError)
    code = ("import sys; sys.modules['psycopg'] = None\n"
            "from synartesis.cli import main\n"
            "main(['list'])\n")
    env = {**os.environ, "SYNARTESIS_JOURNAL": "postgresql://ana@127.0.0.1:1/synartesis",
           "SYNARTESIS_HOME": str(tmp_path / "home")}
    p = run([sys.executable, "-c", code], env=env, timeout=60, capture_output=True, text=True)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stderr
    assert "psycopg" in p.stderr and "pip install" in p.stderr

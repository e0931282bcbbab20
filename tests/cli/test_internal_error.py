"""A bug in the CLI reaches the user as one line and exit 1, never a traceback (which can
quote what it was handling: a sixth adversarial review's traceback showed an unscrubbed
server stderr). SYNARTESIS_DEBUG=1 (set for the whole suite) shows the traceback instead."""
import pytest

import synartesis.cli.app as cli_app


class _Boom:
    """The real typer app, whose call raises (as a bug in a command would)."""

    def __init__(self, real):
        self._real = real

    def __getattr__(self, name):
        return getattr(self._real, name)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("sk-live-secret-in-the-message")


def test_a_bug_prints_one_line_and_exits_1(monkeypatch, capsys):
    monkeypatch.delenv("SYNARTESIS_DEBUG", raising=False)
    monkeypatch.setattr(cli_app, "app", _Boom(cli_app.app))
    assert cli_app.run(["status"]) == 1
    err = capsys.readouterr().err
    assert err == ("synartesis: internal error (RuntimeError); this is a bug in synartesis. "
                   "Run again with SYNARTESIS_DEBUG=1 to see where it happened.\n")


def test_synartesis_debug_shows_the_traceback(monkeypatch):
    monkeypatch.setenv("SYNARTESIS_DEBUG", "1")
    monkeypatch.setattr(cli_app, "app", _Boom(cli_app.app))
    with pytest.raises(RuntimeError):
        cli_app.run(["status"])

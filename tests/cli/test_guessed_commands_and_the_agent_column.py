"""A new user's round 31, 9h: `sessions`, `session`, `help` and `version` got a bare "No such
command"; `version` now prints the version, `help` the help (`help CMD` that command's), and
the session words point at `list` and `show`. `list`'s agent column showed a session's
`SYNARTESIS_SESSION` name in place of the client: it shows the client, the name beside it."""

from __future__ import annotations

import os

from helpers import RawSession, cli, kv_proxy

from synartesis import __version__


def test_version_and_help_as_words_do_what_the_flags_do(tmp_path):
    v = cli("version")
    assert v.returncode == 0 and v.stdout == f"synartesis {__version__}\n", v.stdout + v.stderr
    for extra in ("--help", "--json"):  # adversarial review 31b: "No such command 'version'"
        w = cli("version", extra)
        assert w.returncode == 0 and w.stdout == v.stdout, (extra, w.stdout + w.stderr)
    h = cli("help")
    assert h.returncode == 0 and "Usage: synartesis" in h.stdout and "undo" in h.stdout, h.stdout + h.stderr
    u = cli("help", "undo")
    assert u.returncode == 0 and "--dry-run" in u.stdout and "--only" in u.stdout, u.stdout + u.stderr


def test_session_words_say_where_sessions_are(tmp_path):
    for word in ("sessions", "session"):
        p = cli(word)
        assert p.returncode == 2 and "No such command" not in p.stderr, p.stderr
        assert "synartesis list" in p.stderr and "synartesis show" in p.stderr, p.stderr
    for word in ("runs", "run", "actions", "calls"):  # fresh user round 31b: `runs` got "Did you mean 'prune'?"
        p = cli(word)
        assert p.returncode == 2 and "Did you mean" not in p.stderr and "synartesis show" in p.stderr, (word, p.stderr)


def test_list_shows_the_client_with_the_session_name_beside_it(tmp_path):
    manifest, journal, state, argv = kv_proxy(tmp_path)
    with RawSession(argv, env={**os.environ, "SYNARTESIS_SESSION": "review-42"}) as s:
        s.handshake(name="claude-code")
        s.call(1, "put", {"key": "k0", "value": "x"})
    out = cli("list", "--journal", str(journal), "--manifest", str(manifest)).stdout
    row = next(line for line in out.splitlines() if line.startswith("s-"))
    assert "claude-code (review-42)" in row, out

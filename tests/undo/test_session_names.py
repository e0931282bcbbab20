"""``undo SESSION`` when a session's name looks like another session's id or a run's id
(adversarial review #3): ambiguous is a usage error, never a silent pick."""

from __future__ import annotations

import json
import os

import pytest
from helpers import RawSession, cli, kv_proxy

from synartesis.errors import UsageError
from synartesis.journal import Journal, RunOrigin
from synartesis.journal.liveness import host_name, start_token
from synartesis.undo.targets import resolve_target


def test_undo_by_the_short_id_list_prints_never_picks_a_session_named_like_it(tmp_path):
    manifest, journal, state, argv = kv_proxy(tmp_path)
    j = ["--manifest", str(manifest), "--journal", str(journal)]
    with RawSession(argv) as s:
        s.handshake()
        s.call(1, "put", {"key": "k0", "value": "A"})
    (first,) = json.loads(cli("list", "--json", *j).stdout)
    short = first["session"][:10]  # what `synartesis list` shows: s-327d7749
    with RawSession(argv, env={**os.environ, "SYNARTESIS_SESSION": short}) as s:  # another agent, named so
        s.handshake()
        s.call(1, "put", {"key": "k1", "value": "B"})
    before = state.read_text()
    r = cli("undo", short, *j)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "ambiguous" in r.stderr and first["session"] in r.stderr, r.stderr
    assert state.read_text() == before  # nothing was undone
    full = cli("undo", first["session"], "--dry-run", *j)  # the whole id is never ambiguous
    assert full.returncode == 0 and '"key":"k0"' in full.stdout and '"key":"k1"' not in full.stdout, full.stdout


def _origin(session: str | None = None) -> RunOrigin:
    return RunOrigin(pid=os.getpid(), started=start_token(os.getpid()), host=host_name(),
                     client_pid=4000, client_started="linux:boot:100", session=session)


def test_a_session_name_that_is_also_a_run_id_prefix_is_ambiguous(tmp_path):
    j = Journal.open(tmp_path / "j" / "journal.db", create=True)
    run = j.begin_run("a", {}, origin=_origin())
    j.begin_run("b", {}, origin=_origin(session=run[:6]))  # another agent named like the first run
    with pytest.raises(UsageError, match="ambiguous"):
        resolve_target(j, run[:6])
    assert resolve_target(j, run).kind == "run"  # a whole run id names that run
    other = j.begin_run("c", {}, origin=_origin(session="chat-1"))
    assert resolve_target(j, "chat-1").run_ids == [other]  # a name no id starts with: that session

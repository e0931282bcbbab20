"""After `undo --force --yes` overwrote a resource that a newer call of the session had changed
and that the undo left in place (it cannot be undone), redo said that call had "nothing to
redo", although the overwrite removed what it did (new user round 8, left at stop 20). Redo
now says the overwrite removed it and whether re-sending the overwritten step brought it back.
Real memory server (an approved ``add_observations`` on an entity ``create_entities`` made)."""
from __future__ import annotations

import json
import os

from helpers import RawSession, cli, proxy_argv
from test_undo_names_what_it_leaves_in_place import POLICY


def test_redo_says_the_overwrite_removed_what_a_left_in_place_call_did(tmp_path, memory_server):
    manifest, journal, graph = tmp_path / "synartesis.yaml", tmp_path / "journal.db", tmp_path / "memory.jsonl"
    manifest.write_text(POLICY)
    env = dict(os.environ, MEMORY_FILE_PATH=str(graph))
    with RawSession(proxy_argv("memory", manifest, journal, memory_server), env=env) as s:
        s.handshake()
        assert not s.call(1, "create_entities", {"entities": [
            {"name": "Alice", "entityType": "person", "observations": ["likes tea"]}]}).get("isError")
        assert not s.call(2, "add_observations", {"observations": [
            {"entityName": "Alice", "contents": ["plays chess"]}]}).get("isError")
        s.close()
    flags = ("--manifest", str(manifest), "--journal", str(journal))
    forced = cli("undo", "--force", "--yes", *flags, env=env)
    assert forced.returncode == 1 and "R E S U L T  partial" in forced.stdout, forced.stdout + forced.stderr
    assert "plays chess" not in graph.read_text()  # the overwrite removed what seq 2 did
    preview = cli("redo", "--dry-run", *flags, env=env)
    redone = cli("redo", "--json", *flags, env=env)
    assert redone.returncode == 0, redone.stdout + redone.stderr
    report = json.loads(redone.stdout)
    (left,) = [s for s in report["steps"] if s["kind"] == "left"]
    assert left["seq"] == 2 and "nothing to redo" not in left["reason"], left
    assert ":1 removed what it did" in left["reason"] and "--force --yes overwrite of step" in left["reason"], left
    assert "what it did stays removed" in left["detail"] and "plays chess" in left["detail"], left
    assert "plays chess" not in graph.read_text() and "likes tea" in graph.read_text()  # as the step says
    text = " ".join(preview.stdout.split())
    assert ":1 removed what it did" in text and "nothing to redo" not in text, preview.stdout
    assert "which puts back only what that call left" in text and "stays removed" in text, preview.stdout

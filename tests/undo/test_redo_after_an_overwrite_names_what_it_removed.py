"""After `undo --force --yes` overwrote a resource that a newer call of the session had changed
and that the undo left in place (it cannot be undone), redo said that call had "nothing to
redo", although the overwrite removed what it did (new user round 8, left at stop 20). Redo
now says the overwrite removed it and whether re-sending the overwritten step brought it back.
When it did not, the run ends partial and the redo exits 1 (it ended ``redone`` and exited 0:
stop 20's leftover).
Real memory server (an approved ``add_observations`` on an entity ``create_entities`` made)."""
from __future__ import annotations

import json

from helpers import MEMORY_LEFT_CALLS, MEMORY_LEFT_POLICY, cli, memory_run


def test_redo_says_the_overwrite_removed_what_a_left_in_place_call_did(tmp_path, memory_server):
    graph, env, flags = memory_run(tmp_path, memory_server, MEMORY_LEFT_CALLS, MEMORY_LEFT_POLICY)
    forced = cli("undo", "--force", "--yes", *flags, env=env)
    assert forced.returncode == 1 and "R E S U L T  partial" in forced.stdout, forced.stdout + forced.stderr
    assert "plays chess" not in graph.read_text()  # the overwrite removed what seq 2 did
    preview = cli("redo", "--dry-run", *flags, env=env)
    redone = cli("redo", "--json", *flags, env=env)
    assert redone.returncode == 1, redone.stdout + redone.stderr
    report = json.loads(redone.stdout)
    assert report["status"] == "partial" and set(report["runs"].values()) == {"partial"}, report
    (left,) = [s for s in report["steps"] if s["kind"] == "left"]
    assert left["seq"] == 2 and "nothing to redo" not in left["reason"], left
    assert ":1 removed what it did" in left["reason"] and "--force --yes overwrite of step" in left["reason"], left
    assert "what it did stays removed" in left["detail"] and "plays chess" in left["detail"], left
    assert "plays chess" not in graph.read_text() and "likes tea" in graph.read_text()  # as the step says
    text = " ".join(preview.stdout.split())
    assert ":1 removed what it did" in text and "nothing to redo" not in text, preview.stdout
    assert "which puts back only what that call left" in text and "stays removed" in text, preview.stdout
    assert "would end partial (dry run)" in text, preview.stdout
    plain = cli("list", *flags, env=env)
    assert " partial " in plain.stdout and "redone" not in plain.stdout, plain.stdout

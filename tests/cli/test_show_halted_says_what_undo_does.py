"""Adversarial review 14 — confusing: `show` words an action an undo halted on as `halted` and
says "`synartesis undo` tries it again". It does not: a plain undo halts at once on such an
action ("halted here on an earlier attempt"), without reading the resource, even once the
person has resolved the conflict; only `undo --replan` (or --force) tried it again. Since round
31 a plain undo reads it again, and show says so. Real proxy, real filesystem server."""

from __future__ import annotations

from helpers import FS_POLICY, cli, files_run


def test_the_command_show_names_for_a_halted_action_undoes_it_once_the_conflict_is_resolved(tmp_path, fs_server):
    root, flags = files_run(tmp_path, fs_server, {"a.txt": "v0"}, [
        ("write_file", {"path": "{root}/a.txt", "content": "v1"})], policy=FS_POLICY)
    (root / "a.txt").write_text("someone else")  # a person's edit: the undo halts on drift
    assert cli("undo", *flags).returncode == 1
    out = " ".join(cli("show", *flags).stdout.split())
    assert "halted: an undo stopped at this call" in out, out
    (root / "a.txt").write_text("v1")  # the person resolves it: the file is as the agent left it
    # show names a plain undo, which reads the resource again (a new user's round 31, #1: a halt
    # no longer sticks until --replan)
    assert "`synartesis undo` reads it again" in out, out
    again = cli("undo", *flags)
    assert again.returncode == 0, again.stdout  # was 1: "halted here on an earlier attempt", nothing read
    assert (root / "a.txt").read_text() == "v0"

"""A rule's ``settle`` read: made only when the server answers a write with an error and no
snapshot or verify read can tell whether it applied (new user round 13, #1). The real
filesystem server's ``move_file`` of a file that is not there answered ENOENT, the move was
journalled ``unknown`` ("no read could tell whether it applied"), and a bare undo of the session
halted on it, although nothing was moved. With the shipped policy's settle read (the
destination, absent means nothing was moved) it is ``failed`` and the undo goes through."""

from __future__ import annotations

import json

import pytest

from helpers import FS_POLICY, RawSession, cli, files_proxy, open_journal
from synartesis.errors import PolicyError
from synartesis.policy import parse_policy

SETTLED_MOVE_POLICY = FS_POLICY + """  - match: "files.get_file_info"
    class: readonly
  - match: "files.move_file"
    class: reversible
    inverse: {tool: files.move_file, args: {source: "$.destination", destination: "$.source"}}
    settle: {tool: files.get_file_info, args: {path: "$.destination"}, absent_when: ["ENOENT"]}
"""


def _run(tmp_path, fs_server, calls):
    root, argv = files_proxy(tmp_path, fs_server, SETTLED_MOVE_POLICY)
    (root / "a.txt").write_text("hello notes")
    (root / "taken.txt").write_text("someone's")
    answers = []
    with RawSession(argv) as s:
        s.handshake()
        for n, (tool, args) in enumerate(calls, 1):
            answers.append(s.call(n, tool, {k: v.format(root=root) for k, v in args.items()}))
    return root, answers, ["--manifest", str(tmp_path / "synartesis.yaml"), "--journal", str(tmp_path / "j.db")]


def test_a_move_of_a_missing_file_is_failed_and_does_not_halt_the_undo(tmp_path, fs_server):
    root, answers, flags = _run(tmp_path, fs_server, [
        ("write_file", {"path": "{root}/a.txt", "content": "clobbered"}),
        ("move_file", {"source": "{root}/b.txt", "destination": "{root}/c.txt"})])
    assert answers[1].get("isError"), answers[1]  # ENOENT: b.txt is not there
    with open_journal(tmp_path / "j.db") as j:
        move = [a for r in j.list_runs() for a in j.actions(r.id) if a.tool == "move_file"][0]
    assert move.status == "failed" and "unchanged" in move.note, (move.status, move.note)  # was unknown
    undo = cli("undo", *flags)
    assert undo.returncode == 0, undo.stdout + undo.stderr  # was 1: halted on the unknown move
    assert (root / "a.txt").read_text() == "hello notes"


def test_a_move_refused_onto_a_file_that_is_there_stays_unknown_and_says_why(tmp_path, fs_server):
    # the destination is there after the error, but nothing was read before the call: it may
    # have been there already (it was) or have been made by this call; undo halts on it
    root, answers, flags = _run(tmp_path, fs_server, [
        ("move_file", {"source": "{root}/a.txt", "destination": "{root}/taken.txt"})])
    assert answers[0].get("isError"), answers[0]
    with open_journal(tmp_path / "j.db") as j:
        (move,) = [a for r in j.list_runs() for a in j.actions(r.id)]
    assert move.status == "unknown" and "settle read found the resource" in move.note, (move.status, move.note)
    assert (root / "a.txt").read_text() == "hello notes" and (root / "taken.txt").read_text() == "someone's"


@pytest.mark.parametrize("rule, message", [
    ('{match: "files.read_text_file", class: readonly, settle: {tool: files.read_text_file, args: {path: "$.path"}}}',
     "a readonly tool needs no settle read"),
    ('{match: "files.write_file", class: reversible, snapshot: {tool: files.read_text_file, args: {path: "$.path"}}, '
     'inverse: {tool: files.write_file, args: {path: "$.path", content: "$snapshot.content"}}, '
     'settle: {tool: files.read_text_file, args: {path: "$.path"}}}', "snapshot already settles an error"),
    ('{match: "files.move_file", class: reversible, inverse: {tool: files.move_file, args: {source: "$.destination", '
     'destination: "$.source"}}, settle: {tool: files.read_text_file, args: {path: "$result.path"}}}', "$result"),
])
def test_a_misplaced_settle_read_is_refused_with_its_line_and_column(rule, message):
    text = f"version: 1\nservers:\n  files: {{}}\ntools:\n  - {rule}\n"
    with pytest.raises(PolicyError) as err:
        parse_policy(text, "p.yaml")
    assert message in str(err.value) and "p.yaml:5:" in str(err.value), str(err.value)


def test_the_shipped_policy_settles_a_move_out_of_the_allowed_folders_as_failed(tmp_path, fs_server):
    """Review 15, F8: the destination outside the server's folders reads "Access denied", not
    ENOENT; nothing can have been moved there, so the move is failed and undo goes through."""
    from pathlib import Path

    import yaml

    shipped = yaml.safe_load((Path(__file__).parents[2] / "policies" / "filesystem.yaml").read_text())
    move = next(r for r in shipped["tools"] if r["match"] == "filesystem.move_file")
    policy = SETTLED_MOVE_POLICY.replace('absent_when: ["ENOENT"]}\n', f'absent_when: {json.dumps(move["settle"]["absent_when"])}}}\n')
    assert policy != SETTLED_MOVE_POLICY
    root, argv = files_proxy(tmp_path, fs_server, policy)
    (root / "a.txt").write_text("hello notes")
    with RawSession(argv) as s:
        s.handshake()
        s.call(1, "write_file", {"path": str(root / "a.txt"), "content": "clobbered"})
        moved = s.call(2, "move_file", {"source": str(root / "a.txt"), "destination": str(tmp_path / "outside.txt")})
    assert moved.get("isError"), moved
    flags = ["--manifest", str(tmp_path / "synartesis.yaml"), "--journal", str(tmp_path / "j.db")]
    undo = cli("undo", *flags)
    assert undo.returncode == 0, undo.stdout + undo.stderr  # was 1: halted on the unknown move
    assert (root / "a.txt").read_text() == "hello notes"

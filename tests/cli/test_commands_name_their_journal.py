"""A new user's round 31, #4: from a folder with its own synartesis.yaml, `gates` said "Nothing
is waiting for a decision." and `approve ID` "no action matches ID" of that folder's journal,
while the installed proxies' journal (in ~/.synartesis) held the call; nothing said which
journal was read. Now they, `list` and `undo` name it, and the installed one beside it. Real
proxy, real CLI."""

from __future__ import annotations

import json
import os

from helpers import FAKE_POLICY, RawSession, cli, kv_proxy

from synartesis.journal import Journal


def _held_in_home_and_a_project(fake_home, tmp_path):
    home = fake_home / ".synartesis"
    home.mkdir(mode=0o700)
    _, installed, _, argv = kv_proxy(home)
    with RawSession(argv) as s:
        s.handshake()
        assert s.call(1, "delete", {"key": "k0"}).get("isError")  # no rule: held
    held = json.loads(cli("gates", "--no-read", "--json", "--journal", str(installed)).stdout)[0]["id"]
    project = tmp_path / "project"
    project.mkdir()
    (project / "synartesis.yaml").write_text(FAKE_POLICY)
    Journal.open(project / "journal.db", create=True).close()
    return installed, project, held


def test_gates_approve_list_and_undo_say_which_journal_they_read(fake_home, tmp_path):
    installed, project, held = _held_in_home_and_a_project(fake_home, tmp_path)
    env = dict(os.environ)
    mine = project / "journal.db"
    hint = f"the installed proxies write to {installed} (add --journal {installed} to read that one)"

    gates = cli("gates", "--no-read", cwd=project, env=env)
    assert gates.returncode == 0, gates.stderr
    assert f"Nothing is waiting for a decision (journal: {mine}, beside the synartesis.yaml found" in gates.stdout, gates.stdout
    assert hint in " ".join(gates.stdout.split()), gates.stdout

    approve = cli("approve", held[:8], "--no-read", cwd=project, env=env)
    assert approve.returncode == 2, approve.stdout + approve.stderr
    flat = " ".join(approve.stderr.split())
    assert f"no action matches {held[:8]} in the journal {mine}" in flat and hint in flat, approve.stderr

    listed = cli("list", cwd=project, env=env)
    assert listed.returncode == 0 and f"journal: {mine}" in listed.stdout, listed.stdout
    assert json.loads(cli("list", "--json", cwd=project, env=env).stdout) == []  # --json: JSON only

    undo = cli("undo", cwd=project, env=env)
    assert f"journal: {mine}" in undo.stdout and hint in " ".join(undo.stdout.split()), undo.stdout + undo.stderr
    assert "journal:" not in cli("undo", "--json", cwd=project, env=env).stdout

    # where the installed journal is the one read, it is named alone
    there = cli("list", cwd=tmp_path, env=env)
    assert f"journal: {installed}" in there.stdout and "installed proxies write" not in there.stdout, there.stdout
    named = cli("gates", "--no-read", "--journal", str(installed), cwd=project, env=env)
    assert held[:8] in named.stdout, named.stdout


def test_no_journal_beside_a_projects_policy_names_the_installed_one(fake_home, tmp_path):
    installed, project, held = _held_in_home_and_a_project(fake_home, tmp_path)
    (project / "journal.db").unlink()
    res = cli("gates", "--no-read", cwd=project, env=dict(os.environ))
    assert res.returncode == 2, res.stdout + res.stderr
    flat = " ".join(res.stderr.split())
    assert f"there is no journal at {project / 'journal.db'} yet" in flat, res.stderr
    assert f"The installed proxies write to {installed} (add --journal {installed} to read that one)" in flat, res.stderr


def test_approve_all_deny_all_and_history_with_nothing_to_show_name_the_journal(fake_home, tmp_path):
    # fresh user round 31b: `approve --all`, `deny --all` and `history` in the project folder said
    # "nothing is awaiting approval" / "nothing was undone …" without saying of which journal
    installed, project, held = _held_in_home_and_a_project(fake_home, tmp_path)
    mine = project / "journal.db"
    for argv in (("approve", "--all", "--no-read"), ("deny", "--all"), ("history",)):
        p = cli(*argv, cwd=project, env=dict(os.environ))
        flat = " ".join(p.stdout.split())
        assert p.returncode == 0 and f"journal: {mine}" in flat, (argv, p.stdout, p.stderr)
        assert f"the installed proxies write to {installed}" in flat, (argv, p.stdout)
    assert held[:8] in cli("gates", "--no-read", "--journal", str(installed)).stdout  # nothing was decided

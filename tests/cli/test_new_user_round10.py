"""new user round 10. #4: `show` said `unrecoverable` for an action an undo halted on, and the
drift note's expected/actual lines lost their indentation. Real proxy, real filesystem server."""

from __future__ import annotations

import json
import os

from helpers import FS_POLICY, cli, files_run


def test_show_words_an_action_an_undo_halted_on_as_halted_and_keeps_the_notes_indentation(tmp_path, fs_server):
    root, flags = files_run(tmp_path, fs_server, {"a.txt": "v0"}, [
        ("write_file", {"path": "{root}/a.txt", "content": "v1"})], policy=FS_POLICY)
    (root / "a.txt").write_text("someone else")  # a person's edit: the undo halts on drift
    assert cli("undo", *flags).returncode == 1
    out = cli("show", *flags).stdout
    lines = out.splitlines()
    row = next(line for line in lines if "files.write_file" in line and ":1" in line)
    assert " halted " in row and "unrecoverable" not in out, out
    assert "halted: an undo stopped at this call without confirming it was reverted" in " ".join(out.split()), out
    assert any(line.startswith("       note: drift at sequence 1") for line in lines), out
    assert any(line.startswith("               expected: ") for line in lines), out  # the note's own 2, under its text
    assert any(line.startswith("               actual:   ") for line in lines), out
    assert "1 halted" in out, out
    (action,) = json.loads(cli("show", "--json", *flags).stdout)["actions"]
    assert action["status"] == "unrecoverable", action  # the journal's word, where it is data


def test_a_command_that_finds_no_journal_exits_2_a_configuration_error_and_says_where_it_looked(tmp_path):
    # #6: it exited 1 (halted or refused), which the README did not say; now 2, as a journal
    # that is not one
    jp = tmp_path / "none.db"
    for args in (["list"], ["show"], ["undo"], ["redo"], ["history"]):
        res = cli(*args, "--journal", str(jp))
        assert res.returncode == 2, (args, res.returncode, res.stderr)
        assert f"there is no journal at {jp} yet" in res.stderr and "Traceback" not in res.stderr, res.stderr
    assert not jp.exists()


def test_the_purge_dry_run_says_the_backups_are_kept(fake_home, tmp_path):
    # #7: the plan listed what --purge deletes and said nothing of the backups it keeps
    from installkit import DESKTOP, cli as kit_cli, fake_proxy, place

    place(fake_home, "claude-desktop", DESKTOP)
    assert kit_cli(tmp_path, "install", "--yes", "--no-start", "--proxy-path", fake_proxy(tmp_path)).returncode == 0
    backups = fake_home / ".synartesis" / "backups"
    assert backups.is_dir()
    plan = kit_cli(tmp_path, "uninstall", "--purge", "--dry-run")
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert f"will keep {backups} (backups are always kept)" in plan.stdout, plan.stdout
    doc = json.loads(kit_cli(tmp_path, "uninstall", "--purge", "--dry-run", "--json").stdout)
    assert doc["keep"] == [str(backups)], doc
    plain = kit_cli(tmp_path, "uninstall", "--dry-run")  # without --purge nothing is deleted: no such line
    assert "will keep" not in plain.stdout, plain.stdout


def test_gates_prints_the_approve_command_as_it_is_typed_here_without_a_by_the_demo_does_not_use(tmp_path):
    # #8: `gates` suggested `--by demo --journal …` where the demo (in its folder, where the
    # journal is found by itself) runs `approve ID`; --journal is named when gates was given one
    from helpers import RawSession, kv_proxy

    manifest, journal, state, argv = kv_proxy(tmp_path)
    with RawSession(argv) as s:
        s.handshake()
        assert s.call(1, "delete", {"key": "k0"}).get("isError")  # no rule: held
    here = cli("gates", "--no-read", cwd=tmp_path, env={**os.environ, "USER": "demo"})
    assert here.returncode == 0, here.stdout + here.stderr
    line = next(x for x in here.stdout.splitlines() if x.startswith("approve one:"))
    assert "--by" not in line.split("(")[0] and "--journal" not in line, line
    assert "(decided as demo; --by NAME to say otherwise)" in line, line
    named = cli("gates", "--no-read", "--journal", str(journal), env={**os.environ, "USER": "demo"})
    line = next(x for x in named.stdout.splitlines() if x.startswith("approve all:"))
    assert line.endswith(f"approve --all --journal {journal}"), line


def test_help_reflows_a_commands_docstring_to_the_terminal_width(tmp_path):
    """#10: `uninstall --help` at 80 columns broke each docstring line in two ("an entry that
    was" / "deleted"): typer keeps the breaks after a docstring's first paragraph."""
    env = {**os.environ, "COLUMNS": "80", "HOME": str(tmp_path)}
    out = cli("uninstall", "--help", env=env).stdout
    assert "that was deleted is not brought back" in out, out  # on one line: the paragraph reflowed
    assert max(len(line) for line in out.splitlines()) <= 80, out

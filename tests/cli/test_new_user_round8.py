"""What a new user on a fresh clone found outside undo (round 8): exit codes for nothing to do,
`uninstall --purge` deleting what it did not list, and the small wording items."""

from __future__ import annotations

import re

from installkit import DESKTOP, cli, fake_proxy, place

from synartesis.journal import Journal


def test_approve_all_with_nothing_waiting_says_so_and_succeeds(tmp_path):
    """`approve --all` brings about "nothing waiting": already so is success (README, exit codes)."""
    journal = tmp_path / "journal.db"
    Journal.open(journal, create=True).close()
    for verb in ("approve", "deny"):
        res = cli(tmp_path, verb, "--all", "--journal", str(journal))
        assert res.returncode == 0, res.stdout + res.stderr
        assert "nothing is awaiting approval" in res.stdout


def test_uninstall_with_nothing_installed_says_so_and_succeeds(fake_home, tmp_path):
    res = cli(tmp_path, "uninstall", "--yes")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "no install record" in res.stdout and "Nothing to restore." in res.stdout


def test_the_readme_says_which_nothing_to_do_is_success():
    from pathlib import Path

    text = " ".join((Path(__file__).parents[2] / "README.md").read_text().split())
    assert "`approve --all` or `deny --all` with nothing waiting" in text
    assert "`uninstall` with nothing to restore" in text


def test_purge_lists_every_file_it_deletes_and_does_not_contradict_itself(fake_home, tmp_path):
    """After a plain uninstall, `uninstall --purge --yes` said "no install record" and then
    deleted installed.json (not listed), and left the compiled policy cache unmentioned."""
    from synartesis.policy.cache import load_policy_cached

    place(fake_home, "claude-desktop", DESKTOP)
    assert cli(tmp_path, "install", "--yes", "--no-start", "--proxy-path", fake_proxy(tmp_path)).returncode == 0
    assert cli(tmp_path, "uninstall", "--yes").returncode == 0
    home = fake_home / ".synartesis"
    load_policy_cached(home / "synartesis.yaml", home)
    dry = cli(tmp_path, "uninstall", "--purge", "--dry-run")
    res = cli(tmp_path, "uninstall", "--purge", "--yes")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "no install record" not in dry.stdout + res.stdout
    # with --yes the run says what it deleted, not what it will (new user round 31, #9g)
    assert "will delete" not in res.stdout
    listed = set(re.findall(r"will delete (\S+)", dry.stdout))
    deleted = set(re.findall(r"✓ deleted (\S+)", res.stdout))
    assert deleted and deleted == listed, res.stdout
    assert str(home / "installed.json") in deleted and any("/policy-" in p for p in deleted)
    assert not list(home.glob("policy-*.json")) and not (home / "installed.json").exists()


def test_list_runs_and_prune_name_each_runs_servers_and_its_whole_status(tmp_path):
    """`list --runs` had no servers column (two runs of one agent could not be told apart) and
    `prune` showed no servers and cut "compensated (unverified: 1)" to "compensated"."""
    from helpers import FAKE_BLIND_POLICY, RawSession, kv_proxy
    from helpers import cli as run_cli

    manifest, journal, _state, argv = kv_proxy(tmp_path, policy=FAKE_BLIND_POLICY)
    with RawSession(argv) as s:
        s.handshake()
        assert not s.call(1, "put", {"key": "k0", "value": "agent"}).get("isError")
    j = ["--manifest", str(manifest), "--journal", str(journal)]
    assert run_cli("undo", *j).returncode == 0
    listed = run_cli("list", "--runs", *j).stdout
    header = listed.splitlines()[0].split()
    assert "servers" in header and header.index("servers") < header.index("status"), listed
    assert "kv" in listed and "compensated (unverified: 1)" in listed, listed
    pruned = run_cli("prune", "--older-than", "0", *j).stdout
    (line,) = [x for x in pruned.splitlines() if x.startswith("would delete ")]
    assert "  kv  " in line and "compensated (unverified: 1)" in line, pruned


def test_install_names_a_file_that_is_not_valid_json_once(fake_home, tmp_path):
    """It printed "✗ FILE: FILE:3:29: …"."""
    cfg = place(fake_home, "cursor", '{\n  "mcpServers": {\n    "a": {"command": "x",, }\n  }\n}\n')
    res = cli(tmp_path, "install", "--dry-run", "--no-start", "--proxy-path", fake_proxy(tmp_path))
    (line,) = [x for x in res.stdout.splitlines() if x.startswith("✗")]
    assert line.count(str(cfg)) == 1 and re.match(rf"✗ {re.escape(str(cfg))}:3:\d+: ", line), res.stdout


def test_status_in_a_home_with_no_policy_says_none_exists_yet(fake_home, tmp_path):
    place(fake_home, "cursor", '{"mcpServers": {"a": {"command": "node", "args": ["a.js"]}}}')
    res = cli(tmp_path, "status")
    last = res.stdout.strip().splitlines()[-1]
    assert "no policy yet" in last and "`synartesis install` writes" in last, res.stdout
    assert "; policy: " not in last


def test_no_journal_yet_names_the_one_source_it_used(fake_home, tmp_path, monkeypatch):
    """It listed every possible source (--journal, $SYNARTESIS_JOURNAL, …) instead of the one used."""
    monkeypatch.delenv("SYNARTESIS_JOURNAL", raising=False)
    res = cli(tmp_path, "list")
    assert res.returncode != 0 and "no journal at" in res.stderr, res.stderr
    said = " ".join(res.stderr.split())
    assert "took that location from $SYNARTESIS_HOME" in said and "--journal" not in said, said
    given = cli(tmp_path, "list", "--journal", str(tmp_path / "j.db"))
    said = " ".join(given.stderr.split())
    assert "took that location from --journal." in said and "SYNARTESIS_HOME" not in said, said
    monkeypatch.setenv("SYNARTESIS_JOURNAL", str(tmp_path / "e.db"))
    said = " ".join(cli(tmp_path, "list").stderr.split())
    assert "took that location from $SYNARTESIS_JOURNAL" in said and "--journal" not in said, said


def test_approve_all_json_with_nothing_waiting_prints_an_empty_list(tmp_path):
    """Adversarial review 31: `approve --all --json` (and deny) printed the sentence, not JSON."""
    import json

    journal = tmp_path / "journal.db"
    Journal.open(journal, create=True).close()
    for verb in ("approve", "deny"):
        res = cli(tmp_path, verb, "--all", "--json", "--journal", str(journal))
        assert res.returncode == 0, res.stdout + res.stderr
        assert json.loads(res.stdout) == [], res.stdout

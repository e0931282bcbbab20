"""The small wording items a new user on a fresh clone found (round 9, left at stop 20): the
purge plan counts what the journal holds; "no journal" names the path (the variable only when
it is set); one text for an empty undo plan; a new file's hold says in words that there is
nothing to restore; the demo shows the approve command it runs."""

from __future__ import annotations

from installkit import DESKTOP, cli, fake_proxy, place


def test_the_purge_plan_says_what_the_journal_holds(fake_home, tmp_path):
    from helpers import FAKE_POLICY, FAKE_SERVER, RawSession, proxy_argv

    place(fake_home, "claude-desktop", DESKTOP)
    assert cli(tmp_path, "install", "--yes", "--no-start", "--proxy-path", fake_proxy(tmp_path)).returncode == 0
    home = fake_home / ".synartesis"
    state = tmp_path / "kv.json"
    state.write_text('{"k": "v"}')
    manifest = tmp_path / "kv.yaml"
    manifest.write_text(FAKE_POLICY)
    with RawSession(proxy_argv("kv", manifest, home / "journal.db", [*FAKE_SERVER, "--state", str(state)])) as s:
        s.handshake()
        assert not s.call(1, "put", {"key": "k", "value": "w"}).get("isError")
        assert s.call(2, "delete", {"key": "k"}).get("isError")  # no rule: held
        s.close()
    plan = cli(tmp_path, "uninstall", "--purge", "--dry-run")
    assert plan.returncode == 0, plan.stdout + plan.stderr
    line = next(x for x in plan.stdout.splitlines() if "journal.db" in x and "will delete" in x)
    assert "1 run, 2 actions, 1 held call waiting for approval" in line, plan.stdout
    assert "undo history" in line, line


def test_no_journal_names_the_default_path_and_the_variable_only_when_it_is_set(fake_home, tmp_path, monkeypatch):
    monkeypatch.delenv("SYNARTESIS_HOME")
    default = cli(tmp_path, "list")
    text = default.stdout + default.stderr
    assert default.returncode != 0 and str(fake_home / ".synartesis") in text, text
    assert "$SYNARTESIS_HOME" not in text and "the default home" in text, text
    monkeypatch.setenv("SYNARTESIS_HOME", str(tmp_path / "elsewhere"))
    given = cli(tmp_path, "list")
    text = given.stdout + given.stderr
    assert f"$SYNARTESIS_HOME ({tmp_path / 'elsewhere'}" in text, text

"""install / uninstall through the services (plan → apply) under the temporary HOME."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from synartesis import fsops
from synartesis.errors import ConflictError
from synartesis.services.install import (apply_install, plan_install,
                                         restore_from_backup)
from synartesis.services.install_state import load_state

from installkit import CLIENT_PATH, DESKTOP, actions, fake_proxy, install, make_env, options, place, uninstall  # noqa: F401


def test_install_wraps_in_place_and_keeps_every_other_key(fake_home, tmp_path):
    cfg = place(fake_home, "claude-desktop", DESKTOP)
    env = make_env(fake_home)
    plan, result = install(env, tmp_path)
    assert result.ok and [o.status for o in result.files] == ["written"]
    data = json.loads(cfg.read_text())
    files = data["mcpServers"]["files"]
    assert files["command"] == fake_proxy(tmp_path)
    assert files["args"] == ["proxy", "--server", "files", "--", "npx", "-y",
                             "@modelcontextprotocol/server-filesystem", "/home/alex/notes"]
    assert files["env"] == {"API_KEY": "sk-secret-value-1234567890"}
    assert data["mcpServers"]["remote"] == {"url": "https://example.net/mcp"}
    assert actions(plan) == {"claude-desktop:files": "wrap", "claude-desktop:remote": "remote"}
    assert result.restart and "Claude Desktop" in result.restart[0]


def test_policy_records_origin_and_never_env_values(fake_home, tmp_path):
    cfg = place(fake_home, "claude-desktop", DESKTOP)
    install(make_env(fake_home), tmp_path)
    policy = (fake_home / ".synartesis" / "synartesis.yaml").read_text()
    assert "sk-secret-value" not in policy
    import yaml

    server = yaml.safe_load(policy)["servers"]["files"]
    assert server["origin"] == {"client": "claude-desktop", "file": str(cfg), "scope": "user", "entry": "files"}
    assert server["command"] == "npx"
    state_text = (fake_home / ".synartesis" / "installed.json").read_text()
    assert "sk-secret-value" not in state_text
    for p in (fake_home / ".synartesis" / "synartesis.yaml", fake_home / ".synartesis" / "installed.json"):
        assert stat.S_IMODE(p.stat().st_mode) == 0o600


def test_backup_is_private_timestamped_and_holds_the_original(fake_home, tmp_path):
    cfg = place(fake_home, "claude-desktop", DESKTOP)
    _, result = install(make_env(fake_home), tmp_path)
    backup = Path(result.files[0].backup)
    assert backup.read_bytes() == DESKTOP.encode()
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600
    assert stat.S_IMODE(backup.parent.stat().st_mode) == 0o700
    assert fsops.read_backup_meta(backup)["original"] == str(cfg)


def test_install_twice_changes_nothing_then_a_hand_added_server_is_the_only_one_wrapped(fake_home, tmp_path):
    cfg = place(fake_home, "cursor", '{\n  "mcpServers": {\n    "a": {"command": "npx", "args": ["a"]}\n  }\n}\n')
    env = make_env(fake_home)
    install(env, tmp_path)
    after_first = cfg.read_bytes()
    policy_first = (fake_home / ".synartesis" / "synartesis.yaml").read_bytes()
    state_first = (fake_home / ".synartesis" / "installed.json").read_bytes()
    plan2 = plan_install(env, options(tmp_path))
    assert not plan2.changes and actions(plan2) == {"cursor:a": "ours"}
    apply_install(env, plan2)
    assert cfg.read_bytes() == after_first
    assert (fake_home / ".synartesis" / "synartesis.yaml").read_bytes() == policy_first
    assert (fake_home / ".synartesis" / "installed.json").read_bytes() == state_first
    backups = list((fake_home / ".synartesis" / "backups").glob("*.bak"))
    # a third run after the user adds a server by hand wraps only that one
    data = json.loads(after_first)
    text = after_first.decode().replace('\n  }\n}', ',\n    "b": {"command": "uvx", "args": ["b"]}\n  }\n}')
    cfg.write_text(text)
    assert json.loads(text)["mcpServers"]["a"] == data["mcpServers"]["a"]
    plan3, result3 = install(env, tmp_path)
    assert actions(plan3) == {"cursor:a": "ours", "cursor:b": "wrap"}
    now = json.loads(cfg.read_text())["mcpServers"]
    assert now["a"] == data["mcpServers"]["a"]
    assert now["b"]["args"][:5] == ["proxy", "--server", "b", "--", "uvx"]
    assert len(list((fake_home / ".synartesis" / "backups").glob("*.bak"))) == len(backups) + 1
    # and uninstall still gives back the original of both
    uninstall(env)
    assert cfg.read_text() == '{\n  "mcpServers": {\n    "a": {"command": "npx", "args": ["a"]},\n    "b": {"command": "uvx", "args": ["b"]}\n  }\n}\n'


def test_client_rewrite_between_read_and_replace_is_refused_and_nothing_is_lost(fake_home, tmp_path):
    cfg = place(fake_home, "claude-desktop", DESKTOP)
    env = make_env(fake_home)
    plan = plan_install(env, options(tmp_path))
    client_version = DESKTOP.replace('"globalShortcut": ""', '"globalShortcut": "Alt+Space"')

    def client_rewrites(path: Path) -> None:
        path.write_text(client_version)

    result = apply_install(env, plan, before_compare=client_rewrites)
    assert [o.status for o in result.files] == ["conflict"]
    assert "changed while synartesis was working" in result.files[0].message
    assert cfg.read_text() == client_version
    assert not [p for p in cfg.parent.iterdir() if p.name != cfg.name]  # no temp file left behind
    assert load_state(env).entries == []
    # planned before, changed after planning: refused the same way
    plan = plan_install(env, options(tmp_path))
    cfg.write_text(client_version + " ")
    result = apply_install(env, plan)
    assert result.files[0].status == "conflict" and cfg.read_text() == client_version + " "


def test_replace_checked_keeps_mode_and_symlink(tmp_path):
    real = tmp_path / "dotfiles" / "mcp.json"
    real.parent.mkdir()
    real.write_text("{}")
    real.chmod(0o640)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    fsops.replace_checked(link, b"{}", b'{"a": 1}')
    assert link.is_symlink() and real.read_text() == '{"a": 1}'
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    with pytest.raises(ConflictError):
        fsops.replace_checked(link, b"{}", b"{}")


def test_read_only_config_is_refused_not_chmodded(fake_home, tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root can write read-only files")
    cfg = place(fake_home, "claude-desktop", DESKTOP)
    cfg.chmod(0o444)
    _, result = install(make_env(fake_home), tmp_path)
    assert result.files[0].status == "error" and "read-only" in result.files[0].message
    assert stat.S_IMODE(cfg.stat().st_mode) == 0o444 and cfg.read_text() == DESKTOP


def test_user_edit_of_a_wrapped_entry_is_left_alone_by_uninstall(fake_home, tmp_path):
    cfg = place(fake_home, "cursor", '{"mcpServers": {"a": {"command": "npx", "args": ["a"]}, '
                                     '"b": {"command": "npx", "args": ["b"]}}}')
    env = make_env(fake_home)
    install(env, tmp_path)
    data = json.loads(cfg.read_text())
    data["mcpServers"]["a"]["args"].append("--verbose")
    cfg.write_text(json.dumps(data))
    plan, result = uninstall(env)
    reasons = {e.name: e.action for f in plan.files for e in f.entries}
    assert reasons == {"a": "edited", "b": "restore"}
    after = json.loads(cfg.read_text())["mcpServers"]
    assert after["a"] == data["mcpServers"]["a"]
    assert after["b"] == {"command": "npx", "args": ["b"]}
    # the entry left alone keeps its record (new user 18, #2): undo the edit, and uninstall restores it
    assert [e["name"] for e in load_state(env).entries] == ["a"]


def test_uninstall_never_resurrects_a_deleted_entry(fake_home, tmp_path):
    cfg = place(fake_home, "cursor", '{"mcpServers": {"a": {"command": "npx"}, "b": {"command": "uvx"}}}')
    env = make_env(fake_home)
    install(env, tmp_path)
    data = json.loads(cfg.read_text())
    del data["mcpServers"]["a"]
    cfg.write_text(json.dumps(data))
    plan, _ = uninstall(env)
    assert {e.name: e.action for f in plan.files for e in f.entries} == {"a": "missing", "b": "restore"}
    assert json.loads(cfg.read_text()) == {"mcpServers": {"b": {"command": "uvx"}}}


def test_claude_code_project_servers_get_a_local_shadow_and_mcp_json_is_never_edited(fake_home, tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    mcp_json = proj / ".mcp.json"
    mcp_text = '{\n  "mcpServers": {\n    "db": {"command": "uvx", "args": ["mcp-server-sqlite"], "env": {"T": "${T}"}},\n    "off": {"command": "x"},\n    "pending": {"command": "y"}\n  }\n}\n'
    mcp_json.write_text(mcp_text)
    user = ('{\n  "numStartups": 1,\n  "projects": {\n    "' + str(proj) + '": {\n      "allowedTools": [],\n'
            '      "enabledMcpjsonServers": ["db"],\n      "disabledMcpjsonServers": ["off"]\n    }\n  },\n'
            '  "userID": "0"\n}\n')
    cfg = place(fake_home, "claude-code", user)
    env = make_env(fake_home)
    plan, result = install(env, tmp_path, client="claude-code")
    assert result.ok
    assert mcp_json.read_text() == mcp_text
    acts = actions(plan)
    assert acts == {"claude-code:db": "shadow", "claude-code:off": "uncovered", "claude-code:pending": "uncovered"}
    local = json.loads(cfg.read_text())["projects"][str(proj)]
    assert local["mcpServers"]["db"] == {"command": fake_proxy(tmp_path),
                                         "args": ["proxy", "--server", "db", "--", "uvx", "mcp-server-sqlite"],
                                         "env": {"T": "${T}"}}
    assert local["allowedTools"] == []
    plan2 = plan_install(env, options(tmp_path, client="claude-code"))
    assert not plan2.changes
    uninstall(env)
    assert cfg.read_text() == user and mcp_json.read_text() == mcp_text


def test_cursor_project_file_is_reported_unless_include_project_files(fake_home, tmp_path):
    proj = tmp_path / "work"
    (proj / ".cursor").mkdir(parents=True)
    pfile = proj / ".cursor" / "mcp.json"
    text = '{"mcpServers": {"p": {"command": "node", "args": ["p.js"]}}}'
    pfile.write_text(text)
    env = make_env(fake_home, proj)
    plan, _ = install(env, tmp_path, client="cursor")
    assert actions(plan) == {"cursor:p": "uncovered"} and pfile.read_text() == text
    plan, result = install(env, tmp_path, client="cursor", include_project_files=True)
    assert actions(plan) == {"cursor:p": "wrap"} and result.ok
    assert json.loads(pfile.read_text())["mcpServers"]["p"]["args"][:3] == ["proxy", "--server", "p"]
    uninstall(env)
    assert pfile.read_text() == text


def test_same_name_different_command_lines_get_distinct_policy_keys(fake_home, tmp_path):
    place(fake_home, "cursor", '{"mcpServers": {"git": {"command": "uvx", "args": ["mcp-server-git"]}}}')
    place(fake_home, "codex", '[mcp_servers.git]\ncommand = "uvx"\nargs = ["mcp-server-git", "--repository", "/r"]\n'
                              '[mcp_servers.same]\ncommand = "npx"\n')
    place(fake_home, "claude-desktop", '{"mcpServers": {"same": {"command": "npx"}}}')
    plan, _ = install(make_env(fake_home), tmp_path)
    keys = {f"{e.client}:{e.name}": e.policy_key for e in plan.entries}
    assert keys == {"claude-desktop:same": "same", "codex:git": "git", "codex:same": "same",
                    "cursor:git": "git-cursor"}
    import yaml

    servers = yaml.safe_load((fake_home / ".synartesis" / "synartesis.yaml").read_text())["servers"]
    assert set(servers) == {"same", "git", "git-cursor"}
    assert servers["git-cursor"]["origin"]["client"] == "cursor"


def test_other_wrappers_and_shell_commands_are_reported_not_touched(fake_home, tmp_path):
    text = json.dumps({"mcpServers": {
        "scan": {"command": "uvx", "args": ["invariant-gateway@latest", "mcp", "--exec", "npx", "x"]},
        "mcpm": {"command": "mcpm", "args": ["run", "x"]},
        "shell": {"command": "dotenvx run -- npx", "args": ["-y", "x"]},
        "win": {"command": "cmd", "args": ["/c", "npx", "-y", "x"]},
        "bad": {"command": ["npx"]},
    }}, indent=2)
    cfg = place(fake_home, "cursor", text)
    plan, _ = install(make_env(fake_home), tmp_path)
    assert actions(plan) == {"cursor:scan": "other-wrapper", "cursor:mcpm": "other-wrapper",
                             "cursor:shell": "skipped", "cursor:win": "wrap", "cursor:bad": "invalid"}
    after = json.loads(cfg.read_text())["mcpServers"]
    assert after["win"]["args"] == ["proxy", "--server", "win", "--", "cmd", "/c", "npx", "-y", "x"]
    for k in ("scan", "mcpm", "shell", "bad"):
        assert after[k] == json.loads(text)["mcpServers"][k]


def test_managed_allowlist_by_command_skips_the_entry(fake_home, tmp_path):
    managed = tmp_path / "system" / "etc" / "claude-code" / "managed-settings.json"
    managed.parent.mkdir(parents=True)
    managed.write_text(json.dumps({"allowedMcpServers": [{"serverCommand": ["npx", "-y", "ok"]},
                                                         {"serverName": "named"}],
                                   "deniedMcpServers": [{"serverCommand": ["npx", "evil"]}]}))
    place(fake_home, "claude-code", json.dumps({"mcpServers": {
        "ok": {"command": "npx", "args": ["-y", "ok"]},
        "named": {"command": "npx", "args": ["named"]},
        "evil": {"command": "npx", "args": ["evil"]}}}))
    (tmp_path / "system" / "etc" / "claude-code" / "managed-mcp.json").write_text("{}")
    plan, _ = install(make_env(fake_home), tmp_path)
    acts = {e.name: (e.action, e.reason) for e in plan.entries}
    assert acts["ok"][0] == "blocked" and "allowed only by its exact command" in acts["ok"][1]
    assert acts["evil"][0] == "blocked" and "evade" in acts["evil"][1]
    assert acts["named"][0] == "wrap"
    assert any("managed-mcp.json" in w for w in plan.warnings)


def test_policy_key_is_sanitised_when_the_name_cannot_be_one(fake_home, tmp_path):
    cfg = place(fake_home, "cursor", '{"mcpServers": {"gpt.5__x": {"command": "npx"}}}')
    install(make_env(fake_home), tmp_path)
    args = json.loads(cfg.read_text())["mcpServers"]["gpt.5__x"]["args"]
    assert args[:4] == ["proxy", "--server", "gpt-5-x", "--"]


def test_one_broken_file_does_not_stop_the_others(fake_home, tmp_path):
    broken = place(fake_home, "cursor", '{"mcpServers": {"a": {"command": "npx",}}}')
    good = place(fake_home, "codex", '[mcp_servers.a]\ncommand = "npx"\n')
    plan, result = install(make_env(fake_home), tmp_path)
    by = {f.client: f for f in plan.files}
    assert by["cursor"].status == "error" and f"{broken}:1:" in by["cursor"].message
    assert broken.read_text() == '{"mcpServers": {"a": {"command": "npx",}}}'
    assert "proxy" in good.read_text()
    assert {o.client: o.status for o in result.files} == {"codex": "written", "cursor": "error"}


def test_from_backup_restores_the_whole_file_and_backs_up_the_current_one(fake_home, tmp_path):
    cfg = place(fake_home, "claude-desktop", DESKTOP)
    env = make_env(fake_home)
    _, result = install(env, tmp_path)
    wrapped = cfg.read_bytes()
    res = restore_from_backup(env, Path(result.files[0].backup))
    assert cfg.read_text() == DESKTOP
    assert Path(res.previous_backup).read_bytes() == wrapped
    assert res.forgotten == 1 and load_state(env).entries == []


def test_purge_deletes_policy_and_journal_but_keeps_backups(fake_home, tmp_path):
    place(fake_home, "claude-desktop", DESKTOP)
    env = make_env(fake_home)
    install(env, tmp_path)
    home = fake_home / ".synartesis"
    (home / "journal.db").write_bytes(b"x")
    _, result = uninstall(env, purge=True)
    assert not (home / "synartesis.yaml").exists() and not (home / "journal.db").exists()
    assert not (home / "installed.json").exists()
    assert list((home / "backups").glob("*.bak"))
    assert str(home / "backups") in result.kept


def test_uninstall_keeps_the_policy_without_purge(fake_home, tmp_path):
    place(fake_home, "claude-desktop", DESKTOP)
    env = make_env(fake_home)
    install(env, tmp_path)
    uninstall(env)
    assert (fake_home / ".synartesis" / "synartesis.yaml").exists()


def test_every_projects_key_of_one_folder_gets_its_own_local_entry(fake_home, tmp_path):
    # On Windows one folder appears as "C:/x" and "c:/x"; here two spellings via a symlink.
    proj = tmp_path / "proj"
    proj.mkdir()
    alias = tmp_path / "alias"
    alias.symlink_to(proj)
    (proj / ".mcp.json").write_text('{"mcpServers": {"db": {"command": "uvx", "args": ["x"]}}}')
    user = json.dumps({"projects": {str(proj): {"enabledMcpjsonServers": ["db"]},
                                    str(alias): {"enabledMcpjsonServers": ["db"]}}}, indent=2)
    cfg = place(fake_home, "claude-code", user)
    env = make_env(fake_home)
    install(env, tmp_path, client="claude-code")
    projects = json.loads(cfg.read_text())["projects"]
    assert "db" in projects[str(proj)]["mcpServers"] and "db" in projects[str(alias)]["mcpServers"]
    uninstall(env, client="claude-code")
    assert cfg.read_text() == user


def test_a_broken_user_policy_stops_install_before_any_client_file_is_touched(fake_home, tmp_path):
    from synartesis.errors import PolicyError

    cfg = place(fake_home, "claude-desktop", DESKTOP)
    pol = fake_home / ".synartesis" / "synartesis.yaml"
    pol.parent.mkdir()
    pol.write_text("version: 1\nservers: {a: [\n")
    with pytest.raises(PolicyError) as exc:
        plan_install(make_env(fake_home), options(tmp_path))
    assert str(exc.value).startswith(f"{pol}:") and exc.value.exit_code == 2
    assert cfg.read_text() == DESKTOP and pol.read_text() == "version: 1\nservers: {a: [\n"


def test_purge_lists_and_deletes_the_policy_cache_and_the_install_record(fake_home, tmp_path):
    """A new user's round 8: after a plain uninstall, `uninstall --purge --yes` deleted
    installed.json without listing it and left policy-<hash>.json (every server's command line)."""
    from synartesis.policy.cache import cache_path, load_policy_cached

    place(fake_home, "claude-desktop", DESKTOP)
    env = make_env(fake_home)
    install(env, tmp_path)
    uninstall(env)
    home = fake_home / ".synartesis"
    load_policy_cached(home / "synartesis.yaml", home)
    cache = cache_path(home / "synartesis.yaml", home)
    assert cache.exists() and (home / "installed.json").exists()
    plan, result = uninstall(env, purge=True)
    assert plan.files == [] and plan.has_record
    assert set(plan.purge_paths) == {home / "synartesis.yaml", cache, home / "installed.json"}
    assert sorted(result.purged) == sorted(map(str, plan.purge_paths))
    assert not cache.exists() and not (home / "installed.json").exists()


def test_purge_keeps_the_install_record_while_another_client_is_still_wrapped(fake_home, tmp_path):
    place(fake_home, "claude-desktop", DESKTOP)
    place(fake_home, "cursor", DESKTOP)
    env = make_env(fake_home)
    install(env, tmp_path)
    plan, result = uninstall(env, client="cursor", purge=True)
    record = fake_home / ".synartesis" / "installed.json"
    assert record not in plan.purge_paths and str(record) in result.kept and record.exists()
    assert load_state(env).entries and all(e["client"] == "claude-desktop" for e in load_state(env).entries)


def test_purge_keeps_the_policy_and_journal_while_another_client_is_still_wrapped(fake_home, tmp_path):
    """Adversarial review 10: `uninstall --client cursor --purge` deleted the shared policy (every
    call of the entries still wrapped was then held) and would have deleted their journal."""
    place(fake_home, "claude-desktop", DESKTOP)
    place(fake_home, "cursor", DESKTOP)
    env = make_env(fake_home)
    install(env, tmp_path)
    home = fake_home / ".synartesis"
    (home / "journal.db").write_bytes(b"the other client's undo history")
    plan, result = uninstall(env, client="cursor", purge=True)
    assert plan.purge_paths == [] and (home / "synartesis.yaml").exists() and (home / "journal.db").exists()
    assert any("--purge kept" in w for w in plan.warnings), plan.warnings
    _, last = uninstall(env, purge=True)  # once none is left wrapped, the purge goes through
    assert not (home / "synartesis.yaml").exists() and not (home / "journal.db").exists()


def test_an_edit_of_the_policy_between_install_s_compare_and_its_replace_is_kept(fake_home, tmp_path, monkeypatch):
    """install compared the policy, then wrote it whole: an editor's save (or a `pin --write`)
    in between was overwritten. It is compared again just before the replace, under the lock
    `pin --write` takes (adversarial review 16, F3)."""
    cfg = place(fake_home, "cursor", '{\n  "mcpServers": {\n    "a": {"command": "npx", "args": ["a"]}\n  }\n}\n')
    env = make_env(fake_home)
    install(env, tmp_path)
    policy = fake_home / ".synartesis" / "synartesis.yaml"
    cfg.write_text('{\n  "mcpServers": {\n    "a": {"command": "npx", "args": ["a"]},\n'
                   '    "b": {"command": "uvx", "args": ["b"]}\n  }\n}\n')
    plan = plan_install(env, options(tmp_path))
    assert plan.policy_new is not None
    edited = policy.read_text() + "# the user's edit, saved while install ran\n"
    real = fsops.replace_checked
    seen = []

    def editor_saves(path, expected, new, **kw):
        seen.append(path)
        return real(path, expected, new, before_compare=lambda: policy.write_text(edited))

    monkeypatch.setattr(fsops, "replace_checked", editor_saves)
    with pytest.raises(ConflictError):
        apply_install(env, plan)
    assert seen and policy.read_text() == edited


def test_an_entry_keeps_its_shared_key_when_only_its_client_is_installed_again(fake_home, tmp_path):
    """New user 18, #3: Cursor's and Codex's `time` (one command line) shared the key `time`;
    after an uninstall, `install --client cursor` gave Cursor's the key `time-cursor` (the
    policy's origin named Codex's entry, whose file that install did not read), and with it a
    catch-all policy: calls that passed were held."""
    place(fake_home, "cursor", '{"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}')
    place(fake_home, "codex", '[mcp_servers.time]\ncommand = "uvx"\nargs = ["mcp-server-time"]\n')
    env = make_env(fake_home)
    plan, _ = install(env, tmp_path)
    assert {e.client: e.policy_key for e in plan.entries} == {"cursor": "time", "codex": "time"}
    uninstall(env)
    plan, _ = install(env, tmp_path, client="cursor")
    assert [e.policy_key for e in plan.entries] == ["time"]

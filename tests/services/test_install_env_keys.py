"""Two client entries share a policy key only when they start the same server: the same command
line and the same env, working directory and headers. Undo starts a key's server with the env
of the entry its ``origin`` names, so a shared key between Claude Code's and Codex's ``memory``
(each with its own MEMORY_FILE_PATH) would undo one client's run on the other's graph."""

from __future__ import annotations

import json

import yaml
from installkit import install, make_env, place, uninstall

MEM = ["node", "/opt/server-memory/dist/index.js"]


def _claude(env: dict | None = None, cwd: str | None = None) -> str:
    entry = {"command": MEM[0], "args": MEM[1:]}
    if env is not None:
        entry["env"] = env
    if cwd is not None:
        entry["cwd"] = cwd
    return json.dumps({"mcpServers": {"memory": entry}}, indent=2) + "\n"


def _codex(env: dict | None = None) -> str:
    text = f'[mcp_servers.memory]\ncommand = "{MEM[0]}"\nargs = {json.dumps(MEM[1:])}\n'
    if env is not None:
        text += "env = { " + ", ".join(f'{k} = "{v}"' for k, v in env.items()) + " }\n"
    return text


def keys(plan) -> dict[str, str]:
    return {f"{e.client}:{e.name}": e.policy_key for e in plan.entries if e.policy_key}


def origins(home) -> dict[str, str]:
    servers = yaml.safe_load((home / ".synartesis" / "synartesis.yaml").read_text())["servers"]
    return {k: v["origin"]["client"] for k, v in servers.items()}


def test_entries_that_differ_only_in_env_get_their_own_keys_and_origins(fake_home, tmp_path):
    place(fake_home, "claude-code", _claude({"MEMORY_FILE_PATH": "/data/claude.jsonl"}))
    place(fake_home, "codex", _codex({"MEMORY_FILE_PATH": "/data/codex.jsonl"}))
    plan, result = install(make_env(fake_home), tmp_path)
    assert result.ok
    assert keys(plan) == {"claude-code:memory": "memory", "codex:memory": "memory-codex"}
    assert origins(fake_home) == {"memory": "claude-code", "memory-codex": "codex"}
    text = (fake_home / ".synartesis" / "synartesis.yaml").read_text() + \
        (fake_home / ".synartesis" / "installed.json").read_text()
    assert "/data/c" not in text  # the values stay in the client files


def test_entries_that_start_the_same_server_still_share_one_key(fake_home, tmp_path):
    same = {"MEMORY_FILE_PATH": "/data/shared.jsonl"}
    place(fake_home, "claude-code", _claude(same))
    place(fake_home, "codex", _codex(same))
    plan, _ = install(make_env(fake_home), tmp_path)
    assert keys(plan) == {"claude-code:memory": "memory", "codex:memory": "memory"}


def test_a_different_working_directory_is_a_different_server(fake_home, tmp_path):
    place(fake_home, "claude-code", _claude(cwd="/srv/a"))
    place(fake_home, "cursor", _claude(cwd="/srv/b"))
    plan, _ = install(make_env(fake_home), tmp_path)
    assert len(set(keys(plan).values())) == 2


def test_the_keys_hold_through_uninstall_and_reinstall(fake_home, tmp_path):
    place(fake_home, "claude-code", _claude({"MEMORY_FILE_PATH": "/data/claude.jsonl"}))
    place(fake_home, "codex", _codex({"MEMORY_FILE_PATH": "/data/codex.jsonl"}))
    env = make_env(fake_home)
    seen = []
    for _ in range(3):
        plan, result = install(env, tmp_path)
        assert result.ok
        seen.append(keys(plan))
        uninstall(env)
    assert seen[0] == seen[1] == seen[2] == {"claude-code:memory": "memory", "codex:memory": "memory-codex"}


def test_an_install_that_shared_one_key_is_repaired_by_uninstall_and_install(fake_home, tmp_path, monkeypatch):
    """An install made before keys told env apart: both wrapped as `memory`. A re-install warns;
    uninstall then install gives Codex's entry its own key and leaves Claude Code's (the origin)."""
    import synartesis.services.install as install_mod

    place(fake_home, "claude-code", _claude({"MEMORY_FILE_PATH": "/data/claude.jsonl"}))
    place(fake_home, "codex", _codex({"MEMORY_FILE_PATH": "/data/codex.jsonl"}))
    env = make_env(fake_home)
    with monkeypatch.context() as old:  # the install of an earlier version: the command line alone
        old.setattr(install_mod, "_ident", lambda entry, command, args, *_: install_mod._fp(command, args))
        plan, _ = install(env, tmp_path)
    assert set(keys(plan).values()) == {"memory"}

    again, _ = install(env, tmp_path)
    (warning,) = [w for w in again.warnings if "both wrapped as `memory`" in w]
    assert "Claude Code's memory" in warning and "Codex's memory" in warning
    assert "`synartesis uninstall` ends that refusal" in warning and "/data/" not in warning

    uninstall(env)
    fixed, _ = install(env, tmp_path)
    assert keys(fixed) == {"claude-code:memory": "memory", "codex:memory": "memory-codex"}
    assert not [w for w in fixed.warnings if "both wrapped" in w]
    assert origins(fake_home) == {"memory": "claude-code", "memory-codex": "codex"}


def test_an_entry_that_held_a_shared_key_and_lost_its_wrap_is_given_its_own(fake_home, tmp_path, monkeypatch):
    """The install record says Codex's memory was `memory` (an earlier version's install), but
    Codex rewrote its file without our wrap: the re-install gives it a key of its own and says why."""
    import synartesis.services.install as install_mod

    place(fake_home, "claude-code", _claude({"MEMORY_FILE_PATH": "/data/claude.jsonl"}))
    original = _codex({"MEMORY_FILE_PATH": "/data/codex.jsonl"})
    codex = place(fake_home, "codex", original)
    env = make_env(fake_home)
    with monkeypatch.context() as old:
        old.setattr(install_mod, "_ident", lambda entry, command, args, *_: install_mod._fp(command, args))
        install(env, tmp_path)
    codex.write_text(original)

    plan, result = install(env, tmp_path)
    assert result.ok and keys(plan) == {"claude-code:memory": "memory", "codex:memory": "memory-codex"}
    (warning,) = [w for w in plan.warnings if "is given the policy key" in w]
    assert warning.startswith("Codex's memory is given the policy key `memory-codex`, not `memory`")


def test_the_same_env_text_expanded_differently_by_two_clients_is_two_servers(fake_home, tmp_path, monkeypatch):
    """Claude Code expands ${MEMDIR}; Codex passes it as written: two files (adversarial review 8)."""
    monkeypatch.setenv("MEMDIR", "/data")
    place(fake_home, "claude-code", _claude({"MEMORY_FILE_PATH": "${MEMDIR}/m.jsonl"}))
    place(fake_home, "codex", _codex({"MEMORY_FILE_PATH": "${MEMDIR}/m.jsonl"}))
    plan, _ = install(make_env(fake_home), tmp_path)
    assert keys(plan) == {"claude-code:memory": "memory", "codex:memory": "memory-codex"}


def _two_scopes(fake_home, tmp_path):
    """~/.claude.json with a user-scope and a local-scope `memory`, each with its own graph."""
    proj = tmp_path / "proj"
    proj.mkdir()
    place(fake_home, "claude-code", json.dumps({
        "mcpServers": {"memory": {"command": MEM[0], "args": MEM[1:], "env": {"MEMORY_FILE_PATH": "/data/user.jsonl"}}},
        "projects": {str(proj): {"mcpServers": {"memory": {"command": MEM[0], "args": MEM[1:],
                                                             "env": {"MEMORY_FILE_PATH": "/data/local.jsonl"}}}}}}))
    return proj


def test_a_user_scope_and_a_local_scope_entry_of_one_name_are_told_apart(fake_home, tmp_path):
    from synartesis.services.launch_env import entry_env_of

    _two_scopes(fake_home, tmp_path)
    env = make_env(fake_home)
    plan, _ = install(env, tmp_path)
    assert sorted(e.policy_key for e in plan.entries) == ["memory", "memory-claude-code"]
    servers = yaml.safe_load((fake_home / ".synartesis" / "synartesis.yaml").read_text())["servers"]
    assert entry_env_of(servers["memory"]["origin"], env) == {"MEMORY_FILE_PATH": "/data/user.jsonl"}
    assert entry_env_of(servers["memory-claude-code"]["origin"], env) == {"MEMORY_FILE_PATH": "/data/local.jsonl"}


def test_an_old_shared_key_between_scopes_names_each_entry_by_its_scope(fake_home, tmp_path, monkeypatch):
    import synartesis.services.install as install_mod

    proj = _two_scopes(fake_home, tmp_path)
    env = make_env(fake_home)
    with monkeypatch.context() as old:
        old.setattr(install_mod, "_ident", lambda entry, command, args, *_: install_mod._fp(command, args))
        install(env, tmp_path)
    again, _ = install(env, tmp_path)
    (warning,) = [w for w in again.warnings if "both wrapped as `memory`" in w]
    assert warning.startswith(f"Claude Code's memory and Claude Code's memory (local scope, project {proj}) are both")


def test_check_says_why_it_cannot_start_a_key_whose_entries_disagree(fake_home, tmp_path, monkeypatch, memory_server):
    """check used to start it with the disputed variable empty and say undo would do the same."""
    import synartesis.services.install as install_mod
    from installkit import cli

    monkeypatch.delenv("MEMORY_FILE_PATH", raising=False)
    for client, graph in (("claude-code", "claude"), ("cursor", "cursor")):
        place(fake_home, client, json.dumps({"mcpServers": {"memory": {
            "command": memory_server[0], "args": memory_server[1:],
            "env": {"MEMORY_FILE_PATH": str(tmp_path / f"{graph}.jsonl")}}}}))
    env = make_env(fake_home)
    with monkeypatch.context() as old:
        old.setattr(install_mod, "_ident", lambda entry, command, args, *_: install_mod._fp(command, args))
        install(env, tmp_path)
    res = cli(tmp_path, "check", "--server", "memory")
    said = res.stdout + res.stderr
    assert res.returncode == 1, said
    assert "Claude Code's memory and Cursor's memory are both wrapped as `memory`" in said
    assert "undo would do the same" not in said and str(tmp_path / "claude.jsonl") not in said


def test_an_empty_env_is_the_same_server_as_no_env(fake_home, tmp_path):
    """A new user's round 8: Claude Code's `memory` with `"env": {}` and Codex's with no env got
    `memory` and `memory-codex`; an empty table adds nothing to the server's environment."""
    place(fake_home, "claude-code", _claude({}))
    place(fake_home, "codex", _codex())
    plan, result = install(make_env(fake_home), tmp_path)
    assert result.ok and keys(plan) == {"claude-code:memory": "memory", "codex:memory": "memory"}


def test_an_empty_working_directory_is_not_the_same_as_none(fake_home, tmp_path):
    """Codex spawns a server in `cwd = ""` and fails: not the server that has no cwd."""
    place(fake_home, "claude-code", _claude(cwd=""))
    place(fake_home, "cursor", _claude())
    plan, _ = install(make_env(fake_home), tmp_path)
    assert len(set(keys(plan).values())) == 2


def test_a_key_recorded_apart_for_an_empty_env_stays_on_reinstall(fake_home, tmp_path, monkeypatch):
    """An install made while `"env": {}` counted as an env keeps `memory-codex`: a re-install
    never renames a key the policy and journals already use."""
    import synartesis.services.install as install_mod

    place(fake_home, "claude-code", _claude({}))
    place(fake_home, "codex", _codex())
    env = make_env(fake_home)
    real = install_mod._ident
    with monkeypatch.context() as old:  # the earlier version: any `env` key made a server of its own
        old.setattr(install_mod, "_ident", lambda entry, *a: real(entry, *a) + ("env" in entry.value) * "!")
        first, _ = install(env, tmp_path)
    assert keys(first) == {"claude-code:memory": "memory", "codex:memory": "memory-codex"}
    again, result = install(env, tmp_path)
    assert result.ok and keys(again) == keys(first)
    assert not [w for w in again.warnings if "both wrapped" in w or "is given the policy key" in w]

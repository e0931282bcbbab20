"""The same client entry gets the same policy key on every install (issue 9 item 7): after an
uninstall, after a killed install, with secret-looking arguments, across clients."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import helpers
import yaml
from installkit import fake_proxy, install, make_env, options, place, uninstall

GH = {"mcpServers": {"gh": {"command": "npx", "args": ["-y", "gh-mcp", "--token", "ghp_" + "aB3dE5gH7jK9" * 3]}}}


def keys(plan) -> dict[str, str]:
    return {f"{e.client}:{e.name}": e.policy_key for e in plan.entries if e.policy_key}


def test_a_secret_argument_keeps_its_key_through_uninstall_and_reinstall(fake_home, tmp_path):
    place(fake_home, "claude-code", json.dumps(GH, indent=2))
    env = make_env(fake_home)
    seen = []
    for _ in range(3):
        plan, result = install(env, tmp_path)
        assert result.ok
        seen.append(keys(plan)["claude-code:gh"])
        uninstall(env)
    assert seen == ["gh", "gh", "gh"]
    servers = yaml.safe_load((fake_home / ".synartesis" / "synartesis.yaml").read_text())["servers"]
    assert list(servers) == ["gh"]  # no gh-claude-code, gh-claude-code-user drafts piling up


def test_the_users_rules_keep_applying_after_a_reinstall(fake_home, tmp_path):
    place(fake_home, "cursor", json.dumps(GH))
    env = make_env(fake_home)
    install(env, tmp_path)
    policy = fake_home / ".synartesis" / "synartesis.yaml"
    policy.write_text(policy.read_text() + '  - match: "gh.get_issue"\n    class: readonly\n')
    uninstall(env)
    plan, _ = install(env, tmp_path)
    assert keys(plan) == {"cursor:gh": "gh"} and plan.policy_new is None
    assert 'match: "gh.get_issue"' in policy.read_text()


def test_an_edited_command_line_keeps_the_key_of_its_entry(fake_home, tmp_path):
    cfg = place(fake_home, "cursor", json.dumps(GH))
    env = make_env(fake_home)
    install(env, tmp_path)
    uninstall(env)
    changed = json.loads(cfg.read_text())
    changed["mcpServers"]["gh"]["args"].append("--read-only")
    cfg.write_text(json.dumps(changed))
    plan, _ = install(env, tmp_path)
    assert keys(plan) == {"cursor:gh": "gh"}


def test_two_clients_with_different_command_lines_keep_their_own_keys(fake_home, tmp_path):
    place(fake_home, "cursor", json.dumps({"mcpServers": {"git": {"command": "uvx", "args": ["mcp-server-git"]}}}))
    place(fake_home, "claude-desktop", json.dumps({"mcpServers": {"git": {"command": "uvx", "args": ["mcp-server-git", "-r", "/x"]}}}))
    env = make_env(fake_home)
    first, _ = install(env, tmp_path)
    uninstall(env)
    second, _ = install(env, tmp_path)
    assert keys(first) == keys(second)
    assert len(set(keys(first).values())) == 2 and "git" in keys(first).values()


KILLER = textwrap.dedent("""
    import os, signal, sys
    from synartesis.services.install import InstallOptions, apply_install, plan_install
    from synartesis.paths import Env
    env = Env.current()
    plan = plan_install(env, InstallOptions(start=False, proxy_path=sys.argv[1]))
    sig = getattr(signal, sys.argv[2])
    apply_install(env, plan, before_compare=lambda path: os.kill(os.getpid(), sig))
""")


def _killed_install(tmp_path: Path, sig: str) -> subprocess.CompletedProcess:
    return helpers.run([sys.executable, "-c", KILLER, fake_proxy(tmp_path), sig], capture_output=True,
                          text=True, env=dict(os.environ), cwd=tmp_path, timeout=120)


def test_a_killed_install_leaves_no_key_drift_and_its_temp_file_is_cleaned_next_time(fake_home, tmp_path):
    cfg = place(fake_home, "cursor", json.dumps(GH, indent=2))
    before = cfg.read_bytes()
    done = _killed_install(tmp_path, "SIGKILL")  # killed with the temp file written, before the replace
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert cfg.read_bytes() == before
    leftovers = list(cfg.parent.glob(".mcp.json.*.synartesis-tmp"))
    assert len(leftovers) == 1
    env = make_env(fake_home)
    plan, result = install(env, tmp_path)
    assert result.ok and keys(plan) == {"cursor:gh": "gh"}
    assert not list(cfg.parent.glob("*.synartesis-tmp"))
    assert any("interrupted synartesis run" in w and str(leftovers[0]) in w for w in plan.warnings)
    uninstall(env)
    assert cfg.read_bytes() == before


def test_sigterm_during_the_write_removes_the_temp_file_at_once(fake_home, tmp_path):
    cfg = place(fake_home, "cursor", json.dumps(GH, indent=2))
    before = cfg.read_bytes()
    done = _killed_install(tmp_path, "SIGTERM")
    assert done.returncode == -signal.SIGTERM, done.stderr
    assert cfg.read_bytes() == before
    assert not list(cfg.parent.glob("*.synartesis-tmp"))
    plan, _ = install(make_env(fake_home), tmp_path)
    assert keys(plan) == {"cursor:gh": "gh"}


def test_the_policy_keys_do_not_depend_on_the_order_clients_are_planned_in(fake_home, tmp_path):
    place(fake_home, "cursor", json.dumps(GH))
    env = make_env(fake_home)
    from synartesis.services.install import plan_install

    a = keys(plan_install(env, options(tmp_path)))
    b = keys(plan_install(env, options(tmp_path)))
    assert a == b == {"cursor:gh": "gh"}


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "configs" / "claude-code"


def _project_home(fake_home: Path, tmp_path: Path) -> tuple[Path, bytes, Path, bytes, list[str]]:
    """A real ~/.claude.json with one project whose real .mcp.json servers are all approved."""
    proj = tmp_path / "proj"
    proj.mkdir()
    mcp = proj / ".mcp.json"
    mcp_bytes = (FIXTURES / "oxide-disabledtools-lookalike-names.mcp.json").read_bytes()
    mcp.write_bytes(mcp_bytes)
    names = list(json.loads(mcp_bytes)["mcpServers"])
    home_text = (FIXTURES / "callumhoward-home-claude-json-full.json").read_text(encoding="utf-8")
    assert '"projects": {}' in home_text
    home_text = home_text.replace('"projects": {}', '"projects": {' + json.dumps(str(proj)) + ': '
                                  + json.dumps({"enabledMcpjsonServers": names}) + '}', 1)
    cfg = place(fake_home, "claude-code", home_text)
    return cfg, cfg.read_bytes(), mcp, mcp_bytes, names


def test_a_project_server_keeps_its_key_after_the_policy_is_regenerated_and_reinstalled(fake_home, tmp_path):
    """A new user's round 31, #3: the policy moved away while installed, then install (a new
    policy), uninstall, install: `pfiles` became `pfiles-claude-code`, since the new policy's
    origin named the local-scope shadow in ~/.claude.json, which uninstall removes."""
    cfg, cfg_bytes, mcp, mcp_bytes, names = _project_home(fake_home, tmp_path)
    env = make_env(fake_home)
    policy = fake_home / ".synartesis" / "synartesis.yaml"
    first, result = install(env, tmp_path, client="claude-code")
    assert result.ok
    want = {f"claude-code:{n}": n for n in names}
    assert keys(first) == want
    policy.rename(tmp_path / "moved-away.yaml")
    regen, result = install(env, tmp_path)
    assert result.ok and regen.policy_new is not None
    servers = yaml.safe_load(policy.read_text())["servers"]
    for n in want.values():
        assert servers[n]["origin"]["file"] == str(mcp), servers[n]["origin"]
        assert servers[n]["origin"]["scope"] == "project"
    policy.write_text(policy.read_text() + f'  - match: "{names[0]}.some_tool"\n    class: readonly\n')
    for client in (None, "claude-code", None):
        uninstall(env)
        assert cfg.read_bytes() == cfg_bytes and mcp.read_bytes() == mcp_bytes
        plan, result = install(env, tmp_path, client=client)
        assert result.ok and keys(plan) == want and plan.policy_new is None
    assert list(yaml.safe_load(policy.read_text())["servers"]) == list(servers)
    uninstall(env)
    assert cfg.read_bytes() == cfg_bytes and mcp.read_bytes() == mcp_bytes


def test_a_policy_whose_origin_names_a_removed_shadow_still_gives_the_project_entry_its_key(fake_home, tmp_path):
    """A policy written before round 31's fix names the local shadow as the origin: the key stays
    with the project entry that shadow stood for (and no draft for a new key is added)."""
    cfg, cfg_bytes, mcp, mcp_bytes, names = _project_home(fake_home, tmp_path)
    env = make_env(fake_home)
    install(env, tmp_path, client="claude-code")
    policy = fake_home / ".synartesis" / "synartesis.yaml"
    text = policy.read_text()
    assert text.count(f'"file": "{mcp}", "scope": "project"') == len(names)
    policy.write_text(text.replace(f'"file": "{mcp}", "scope": "project"', f'"file": "{cfg}", "scope": "local"'))
    before = policy.read_bytes()
    uninstall(env)
    assert cfg.read_bytes() == cfg_bytes
    plan, result = install(env, tmp_path)
    assert result.ok and keys(plan) == {f"claude-code:{n}": n for n in names}
    assert plan.policy_new is None and policy.read_bytes() == before
    uninstall(env)
    assert cfg.read_bytes() == cfg_bytes and mcp.read_bytes() == mcp_bytes


def test_a_shadow_without_its_install_record_still_names_the_project_entry_as_origin(fake_home, tmp_path):
    """The install record lost, the policy moved away: the regenerated origin is still the
    project entry the wrapped local entry copies."""
    cfg, cfg_bytes, mcp, mcp_bytes, names = _project_home(fake_home, tmp_path)
    env = make_env(fake_home)
    install(env, tmp_path, client="claude-code")
    (fake_home / ".synartesis" / "synartesis.yaml").unlink()
    (fake_home / ".synartesis" / "installed.json").unlink()
    install(env, tmp_path, client="claude-code")
    servers = yaml.safe_load((fake_home / ".synartesis" / "synartesis.yaml").read_text())["servers"]
    assert {n: (s["origin"]["file"], s["origin"]["scope"]) for n, s in servers.items()} == \
        {n: (str(mcp), "project") for n in names}

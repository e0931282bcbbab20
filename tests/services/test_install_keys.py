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

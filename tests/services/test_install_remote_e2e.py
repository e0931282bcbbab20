"""A remote entry end to end: install starts it through ``synartesis remote-relay`` to draft
its policy from ``tools/list``, the wrapped entry is what Claude Code (``claude mcp list``, npm
``@anthropic-ai/claude-code``, no account needed) reports connected, ``check`` reaches it, and
uninstall gives the file back byte for byte."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import netkit
import pytest
from helpers import REPO, run, synartesis_argv
from installkit import make_env, place, uninstall

from synartesis.services.install import InstallOptions, apply_install, plan_install

TOKEN = "crm-e2e-token-0123456789abcdef"


def claude_cli() -> list[str]:
    """How to run Claude Code's CLI from the test servers (.servers), or a local extra install."""
    for base in (REPO / ".servers" / "node_modules", REPO / ".servers-extra" / "node_modules"):
        wrapper = base / "@anthropic-ai" / "claude-code" / "cli-wrapper.cjs"
        if wrapper.exists():
            return ["node", str(wrapper)]
    pytest.fail("@anthropic-ai/claude-code is missing: run .ci/run (npm ci --prefix .servers) first")


def real_proxy() -> str:
    # this venv's console script, as install writes it (not whatever PATH finds first)
    exe = Path(sys.executable).parent / "synartesis"
    assert exe.exists(), f"{exe} is missing: pip install -e ."
    return str(exe)


@pytest.fixture
def crm(tmp_path):
    server = netkit.crm_http(tmp_path / "crm.json", TOKEN)
    yield server
    server.stop()


def test_a_wrapped_remote_entry_is_drafted_from_its_tools_and_claude_code_reports_it_connected(
        fake_home, tmp_path, crm, monkeypatch):
    monkeypatch.setenv("CRM_T", TOKEN)
    text = json.dumps({"mcpServers": {"crm": {"type": "http", "url": crm.url,
                                              "headers": {"Authorization": "Bearer ${CRM_T}"}, "timeout": 60000}}},
                      indent=2) + "\n"
    cfg = place(fake_home, "claude-code", text)
    env = make_env(fake_home)
    plan = plan_install(env, InstallOptions(client="claude-code", proxy_path=real_proxy(), system_root=tmp_path / "s",
                                            start=True, timeout=60))
    assert not plan.start_errors, plan.start_errors
    (p,) = plan.policy_plans
    assert p.source == "shipped" and p.policy_id == "crm"  # recognised by serverInfo over the relay
    result = apply_install(env, plan)
    assert result.ok
    entry = json.loads(cfg.read_text())["mcpServers"]["crm"]
    assert entry["type"] == "stdio" and "--url" in entry["args"] and TOKEN not in json.dumps(entry)

    listed = run([*claude_cli(), "mcp", "list"], text=True, timeout=180,
                 env={**os.environ, "CLAUDE_CONFIG_DIR": str(fake_home)})  # where .claude.json was placed
    assert listed.returncode == 0, listed.stderr
    line = next(x for x in listed.stdout.splitlines() if x.startswith("crm:"))
    assert "Connected" in line and "proxy" in line, listed.stdout

    checked = run(synartesis_argv("check", "--server", "crm"), text=True, timeout=180, cwd=str(tmp_path))
    assert "crm" in checked.stdout + checked.stderr and "did not start" not in checked.stdout + checked.stderr
    uninstall(env, client="claude-code")
    # Claude Code wrote its own state into the file meanwhile (userID, …): our entry is back as it was
    assert json.loads(cfg.read_text())["mcpServers"] == json.loads(text)["mcpServers"]
    assert json.dumps(json.loads(text)["mcpServers"]["crm"], indent=2).replace("\n", "\n    ") in cfg.read_text()


def test_a_known_remote_server_is_recognised_over_the_relay_and_its_references_stay_out(fake_home, tmp_path,
                                                                                        monkeypatch):
    server = netkit.everything("streamableHttp")
    try:
        text = json.dumps({"mcpServers": {"ev": {"url": f"http://127.0.0.1:{server.port}/mcp",
                                                 "headers": {"X-Key": "${env:EV_KEY}"}}}})
        monkeypatch.setenv("EV_KEY", "not-secret-really")
        place(fake_home, "cursor", text)
        env = make_env(fake_home)
        plan = plan_install(env, InstallOptions(client="cursor", proxy_path=real_proxy(),
                                                system_root=tmp_path / "s", start=True, timeout=60))
        assert not plan.start_errors, plan.start_errors
        (p,) = plan.policy_plans
        assert (p.source, p.policy_id) == ("shipped", "everything")  # by serverInfo, through remote-relay
        apply_install(env, plan)
        policy = (fake_home / ".synartesis" / "synartesis.yaml").read_text()
        assert "ev.echo" in policy and "remote-relay" in policy and "not-secret-really" not in policy
    finally:
        server.stop()


def _as_claude_code_starts(entry: dict) -> tuple[list[str], dict[str, str]]:
    """The wrapped entry's argv and environment, ``${VAR}`` expanded in env as Claude Code does
    (an unset variable is left as written)."""
    import re
    expand = lambda v: re.sub(r"\$\{(\w+)\}", lambda m: os.environ.get(m.group(1), m.group(0)), v)  # noqa: E731
    return [entry["command"], *entry["args"]], {**os.environ, **{k: expand(v) for k, v in entry.get("env", {}).items()}}


def test_a_user_installs_a_remote_crm_drives_it_undoes_and_uninstalls(fake_home, tmp_path, monkeypatch):
    """Issue 12 as a user meets it: a Claude Code remote entry with a bearer token from the
    environment → install → the SDK's stdio client through the wrapped entry → undo → status →
    uninstall, then an undo of a later run after the uninstall; the token is nowhere on disk."""
    from helpers import CRM_CALLS, crm_agent, run_async

    store = tmp_path / "crm.json"
    server = netkit.crm_http(store, TOKEN)
    try:
        monkeypatch.setenv("CRM_T", TOKEN)
        text = json.dumps({"mcpServers": {"crm": {"type": "http", "url": server.url,
                                                  "headers": {"Authorization": "Bearer ${CRM_T}"}}}}, indent=2) + "\n"
        cfg = place(fake_home, "claude-code", text)
        env = make_env(fake_home)
        plan = plan_install(env, InstallOptions(client="claude-code", proxy_path=real_proxy(),
                                                system_root=tmp_path / "s", start=True, timeout=60))
        assert apply_install(env, plan).ok
        seeded = store.read_bytes()

        def drive() -> None:
            argv, child_env = _as_claude_code_starts(json.loads(cfg.read_text())["mcpServers"]["crm"])
            seen = run_async(crm_agent(argv, child_env), 300)
            assert len(seen) == len(CRM_CALLS) and store.read_bytes() != seeded

        def undo() -> object:
            return run(synartesis_argv("undo"), text=True, timeout=300, cwd=str(tmp_path),
                       env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"})

        drive()
        done = undo()
        assert done.returncode == 0, done.stdout + done.stderr
        assert "the policy now starts" not in done.stdout  # the run's launch line is the policy's
        assert store.read_bytes() == seeded
        status = run(synartesis_argv("status", "--client", "claude-code"), text=True, timeout=120, cwd=str(tmp_path))
        assert "crm [user] wrapped" in status.stdout and "sign-in: not needed" in status.stdout, status.stdout

        drive()
        uninstall(env, client="claude-code")
        assert cfg.read_text() == text
        monkeypatch.delenv("CRM_T")
        halted = undo()  # the client entry names ${CRM_T}; this shell does not have it
        assert halted.returncode == 1 and "${CRM_T}" in halted.stdout and TOKEN not in halted.stdout
        monkeypatch.setenv("CRM_T", TOKEN)
        done = run(synartesis_argv("undo", "--replan"), text=True, timeout=300, cwd=str(tmp_path),
                   env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"})
        assert done.returncode == 0, done.stdout + done.stderr  # read from the unwrapped entry's headers
        assert store.read_bytes() == seeded
    finally:
        server.stop()
    leaks = [str(p) for p in fake_home.rglob("*") if p.is_file() and TOKEN.encode() in p.read_bytes()]
    assert not leaks


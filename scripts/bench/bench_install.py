"""Benchmark: `synartesis install --dry-run --no-start` over 4 clients × 25 servers (goal ≤ 1 s).

Builds a temporary HOME with a Claude Code, Claude Desktop, Cursor and Codex config of 25 stdio
servers each (every command line different, so every server needs its own policy), then times:

- the whole command as a user runs it (a fresh process: interpreter start, imports, planning,
  diff rendering), median of N runs;
- ``plan_install`` in-process, split into its parts (config planning vs. the policy plan/merge).

Usage: python scripts/bench/bench_install.py [--runs N] [--servers N]
Nothing outside the temporary directory is read or written (HOME and every config variable
point into it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KNOWN = [["npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp/x"],
         ["npx", "-y", "@modelcontextprotocol/server-memory"],
         ["uvx", "mcp-server-git", "--repository", "/tmp/r"],
         ["uvx", "mcp-server-time"]]


def server(i: int, client: str) -> dict:
    base = KNOWN[i % len(KNOWN)] if i % 3 == 0 else ["node", f"/opt/servers/s{i}/index.js"]
    return {"command": base[0], "args": [*base[1:], f"--{client}-{i}"],
            "env": {"API_KEY": "${API_KEY}", "LEVEL": str(i)}}


def build(home: Path, n: int) -> None:
    for client, rel in (("claude-code", ".claude.json"), ("claude-desktop", ".config/Claude/claude_desktop_config.json"),
                        ("cursor", ".cursor/mcp.json")):
        servers = {f"server-{i}": server(i, client) for i in range(n)}
        doc = {"mcpServers": servers} if client != "claude-code" else {"numStartups": 9, "mcpServers": servers,
                                                                      "projects": {}}
        p = home / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(doc, indent=2) + "\n")
    lines = ["# codex\nmodel = \"gpt-5\"\n"]
    for i in range(n):
        s = server(i, "codex")
        lines.append(f"\n[mcp_servers.server-{i}]\ncommand = {json.dumps(s['command'])}\n"
                     f"args = {json.dumps(s['args'])}\n\n[mcp_servers.server-{i}.env]\nLEVEL = \"{i}\"\n")
    p = home / ".codex" / "config.toml"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("".join(lines))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--servers", type=int, default=25)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        build(home, a.servers)
        env = dict(os.environ, HOME=str(home), USERPROFILE=str(home), XDG_CONFIG_HOME=str(home / ".config"),
                   APPDATA=str(home / "AppData/Roaming"), LOCALAPPDATA=str(home / "AppData/Local"),
                   CODEX_HOME=str(home / ".codex"), CLAUDE_CONFIG_DIR=str(home / ".claude"),
                   SYNARTESIS_HOME=str(home / ".synartesis"), NO_COLOR="1")
        exe = str(Path(sys.executable).parent / "synartesis")
        argv = [exe, "install", "--dry-run", "--no-start"]
        times = []
        for _ in range(a.runs):
            t0 = time.perf_counter()
            p = subprocess.run(argv, env=env, cwd=tmp, capture_output=True, text=True)
            times.append(time.perf_counter() - t0)
            if p.returncode != 0:
                print(p.stdout[-2000:], p.stderr[-2000:])
                return 1
        t0 = time.perf_counter()
        subprocess.run([exe, "--help"], env=env, cwd=tmp, capture_output=True)
        startup = time.perf_counter() - t0

        # in-process split
        os.environ.update(env)
        from synartesis.paths import Env
        from synartesis.services import install as svc

        t0 = time.perf_counter()
        plan = svc.plan_install(Env(home=home, environ=env, cwd=Path(tmp)),
                                svc.InstallOptions(start=False, proxy_path=exe))
        total = time.perf_counter() - t0
        wraps = sum(1 for e in plan.entries if e.action == "wrap")
        import synartesis.services.policies as pol

        orig_plan, orig_merge = pol.plan_server_policy, pol.merge_policy_text
        spent = {"policy": 0.0}

        def timed(f):
            def g(*x, **k):
                t = time.perf_counter()
                try:
                    return f(*x, **k)
                finally:
                    spent["policy"] += time.perf_counter() - t
            return g

        pol.plan_server_policy, pol.merge_policy_text = timed(orig_plan), timed(orig_merge)
        t0 = time.perf_counter()
        svc.plan_install(Env(home=home, environ=env, cwd=Path(tmp)), svc.InstallOptions(start=False, proxy_path=exe))
        total2 = time.perf_counter() - t0
        pol.plan_server_policy, pol.merge_policy_text = orig_plan, orig_merge

    med = statistics.median(times)
    print(f"install --dry-run --no-start, 4 clients × {a.servers} servers ({wraps} entries wrapped, "
          f"{len(plan.policy_plans)} policies planned)")
    print(f"  whole command (median of {a.runs}): {med:.3f} s   [goal ≤ 1 s: {'met' if med <= 1 else 'NOT met'}]")
    print(f"  of which CLI start-up (`synartesis --help`): {startup:.3f} s")
    print(f"  plan_install in-process: {total:.3f} s (second run {total2:.3f} s: config planning "
          f"{total2 - spent['policy']:.3f} s, policy plan+merge {spent['policy']:.3f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

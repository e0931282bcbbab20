"""Shared helpers for tests that install into client configs under the temporary HOME."""

from __future__ import annotations

import os
from pathlib import Path

from synartesis.paths import Env
from synartesis.services.install import (InstallOptions, apply_install, apply_uninstall, plan_install,
                                         plan_uninstall)

CLIENT_PATH = {
    "claude-code": ".claude.json",
    "claude-desktop": ".config/Claude/claude_desktop_config.json",
    "cursor": ".cursor/mcp.json",
    "codex": ".codex/config.toml",
}


def place(home: Path, client: str, data: bytes | str) -> Path:
    """Write a client config where that client reads it under ``home``."""
    p = home / CLIENT_PATH[client]
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data.encode() if isinstance(data, str) else data)
    return p


def fake_proxy(tmp_path: Path) -> str:
    """An executable named synartesis (its path is what install writes)."""
    p = tmp_path / "bin" / "synartesis"
    if not p.exists():
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("#!/bin/sh\nexit 0\n")
        p.chmod(0o755)
    return str(p)


def make_env(home: Path, cwd: Path | None = None) -> Env:
    cwd = cwd or home.parent / "work"
    cwd.mkdir(exist_ok=True)
    return Env(home=home, environ=dict(os.environ), platform="linux", cwd=cwd)


def options(tmp_path: Path, **kw) -> InstallOptions:
    kw.setdefault("start", False)
    return InstallOptions(proxy_path=fake_proxy(tmp_path), system_root=tmp_path / "system", **kw)


def install(env: Env, tmp_path: Path, **kw):
    plan = plan_install(env, options(tmp_path, **kw))
    return plan, apply_install(env, plan)


def uninstall(env: Env, **kw):
    plan = plan_uninstall(env, **kw)
    return plan, apply_uninstall(env, plan)


def actions(plan) -> dict[str, str]:
    return {f"{e.client}:{e.name}": e.action for e in plan.entries}


DESKTOP = """{
  "mcpServers": {
    "files": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/alex/notes"],
      "env": {"API_KEY": "sk-secret-value-1234567890"}
    },
    "remote": {"url": "https://example.net/mcp"}
  },
  "globalShortcut": ""
}"""


class CliResult:
    """What :func:`cli` saw: exit code and the two streams."""

    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def cli(cwd: Path, *args: str) -> CliResult:
    """Run the real CLI in this process (much cheaper than a subprocess for large matrices).

    stdout/stderr are strict UTF-8 streams, as a real terminal or pipe is, so text that cannot
    be encoded (a lone surrogate) fails here as it would for a user; any exception that escapes
    the CLI is returned as a traceback on stderr with exit code 99.
    """
    import io
    import traceback
    from contextlib import redirect_stderr, redirect_stdout

    from synartesis.cli.app import run

    streams = [io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict", write_through=True)
               for _ in range(2)]
    old = os.getcwd()
    os.chdir(cwd)
    tb = ""
    try:
        with redirect_stdout(streams[0]), redirect_stderr(streams[1]):
            try:
                code = run(list(args))
            except BaseException:  # noqa: BLE001 - a test wants to see it, never to lose it
                code, tb = 99, traceback.format_exc()
    finally:
        os.chdir(old)
    texts = []
    for s in streams:
        try:
            s.flush()
        except UnicodeError:
            pass
        texts.append(s.buffer.getvalue().decode("utf-8", "backslashreplace"))  # type: ignore[attr-defined]
    return CliResult(code, texts[0], texts[1] + tb)

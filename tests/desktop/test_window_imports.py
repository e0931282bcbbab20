"""The window's heavy modules (starlette, uvicorn, httpx, mcp, keyring) load only when the window
runs: never on the proxy's path, nor when another command starts."""

from __future__ import annotations

import re
import sys

import pytest
from helpers import run

HEAVY = ("starlette", "uvicorn", "httpx", "mcp", "keyring", "synartesis.desktop")


@pytest.mark.parametrize("argv", [["--help"], ["list"], ["proxy", "--help"]])
def test_other_commands_do_not_import_the_window(argv, tmp_path):
    r = run([sys.executable, "-X", "importtime", "-m", "synartesis", *argv], text=True, timeout=60, cwd=tmp_path)
    loaded = set(re.findall(r"\|\s+([\w.]+)\s*$", r.stderr, re.M))
    assert not {m for m in loaded if m.split(".")[0] in HEAVY or m.startswith("synartesis.desktop")}

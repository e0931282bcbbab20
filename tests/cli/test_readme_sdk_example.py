"""The README's script that drives a wrapped server with the mcp SDK runs as printed (a new
user's finding, round 15: the README named no SDK version, and 2.x spells `isError` as
`is_error`). Its server command and folder are swapped for the test's; the rest is the text."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

from helpers import cli, run

README = Path(__file__).resolve().parents[2] / "README.md"


def _example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    [block] = [b for b in blocks if "from mcp.client.stdio import stdio_client" in b]
    return block


def test_the_readme_sdk_script_writes_through_the_proxy_and_undo_puts_it_back(tmp_path, fs_server):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.txt").write_text("before\n")
    init = cli("init", "notes", "--manifest", str(tmp_path / "synartesis.yaml"), "--", *fs_server, str(notes),
               cwd=tmp_path)
    assert init.returncode == 0, init.stdout + init.stderr
    script = _example()
    assert '"npx", "-y", "@modelcontextprotocol/server-filesystem", notes' in script
    script = script.replace('"/home/alex/notes"', json.dumps(str(notes)))
    script = script.replace('"npx", "-y", "@modelcontextprotocol/server-filesystem", notes',
                            ", ".join(json.dumps(a) for a in fs_server) + ", notes")
    (tmp_path / "agent.py").write_text(script)
    bindir = str(Path(sys.executable).parent)
    assert shutil.which("synartesis", path=bindir), "synartesis is not installed beside this python"
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    done = run([sys.executable, "agent.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("done:"), done.stdout + done.stderr
    assert (notes / "a.txt").read_text() == "agent\n"
    undo = cli("undo", "--manifest", "synartesis.yaml", "--journal", "journal.db", cwd=tmp_path)
    assert undo.returncode == 0, undo.stdout + undo.stderr
    assert (notes / "a.txt").read_text() == "before\n"

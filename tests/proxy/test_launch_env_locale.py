"""The variables a run records as given by its client (what undo must give its server again)
never include what Python set in the proxy's own environment: with no locale in its
environment (the mcp SDK's default for a child, Claude Desktop's too) Python coerces the C
locale and sets ``LC_CTYPE`` (PEP 538), which every undo then warned it could not give again."""
from __future__ import annotations

import os
import sys
import textwrap

from helpers import FS_POLICY, files_proxy, open_journal, run

CLIENT = textwrap.dedent('''
    import asyncio, sys
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def main():
        params = StdioServerParameters(command=sys.argv[1], args=sys.argv[2:])  # the SDK's default env
        async with stdio_client(params) as (r, w):
            async with ClientSession(r, w) as s:
                await s.initialize()
                await s.call_tool("write_file", {"path": sys.argv[-1] + "/a.txt", "content": "agent"})
    asyncio.run(main())
''')


def test_a_client_without_a_locale_gives_its_server_nothing_undo_must_give_again(tmp_path, fs_server):
    root, argv = files_proxy(tmp_path, fs_server, FS_POLICY)
    (root / "a.txt").write_text("before")
    (tmp_path / "client.py").write_text(CLIENT)
    env = {k: v for k, v in os.environ.items() if not (k.startswith("LC_") or k in ("LANG", "LANGUAGE"))}
    done = run([sys.executable, str(tmp_path / "client.py"), *argv], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (root / "a.txt").read_text() == "agent"
    with open_journal(tmp_path / "j.db") as j:
        [recorded] = j.list_runs()
        launch = recorded.servers["files"]
    assert "LC_CTYPE" not in launch.get("env", []), launch

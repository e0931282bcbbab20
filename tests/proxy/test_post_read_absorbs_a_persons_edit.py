"""Adversarial review, round 4 — A person's edit made right after a write's answer reaches the agent is recorded as the state
the run left (the write's post-read is now answered after the call's answer went out: the lane
no longer waits for it, a8236a8). Undo then sees no drift and overwrites the person's edit
with the state before the run. Expected: undo halts at seq 1 with both values (the run wrote
"v1"; the file holds the person's text), and the person's text survives."""
import json
import time

import pytest
from helpers import FS_POLICY, RawSession, cli, proxy_argv


@pytest.mark.parametrize("delay", [0.0, 0.05])
def test_undo_does_not_overwrite_an_edit_made_just_after_the_agents_write(tmp_path, fs_server, delay):
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("orig\n")
    manifest, journal = tmp_path / "synartesis.yaml", tmp_path / "j.db"
    manifest.write_text(FS_POLICY)
    j = ["--manifest", str(manifest), "--journal", str(journal)]
    with RawSession(proxy_argv("files", manifest, journal, [*fs_server, str(root)])) as s:
        s.handshake()
        assert not s.call(1, "write_file", {"path": str(root / "a.txt"), "content": "v1\n"}).get("isError")
        time.sleep(delay)
        (root / "a.txt").write_text("a person's edit\n")
    shown = json.loads(cli("show", "--json", *j).stdout)
    real = cli("undo", "--json", *j)
    assert (root / "a.txt").read_text() == "a person's edit\n", (shown, real.stdout)

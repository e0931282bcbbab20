"""`watch --once` (piped: one frame) prints its log oldest change first: a new user saw
18:50:28, then 18:49:24, then 18:49:07 (it printed the newest first, as `recent_actions`
returns them). Real filesystem server, real proxy."""

import json
import re
import time

from helpers import FS_POLICY, RawSession, cli, proxy_argv


def test_watch_once_prints_the_log_in_time_order(tmp_path, fs_server):
    root = tmp_path / "root"
    root.mkdir()
    for name in ("a.txt", "b.txt"):
        (root / name).write_text("orig\n")
    manifest, journal = tmp_path / "synartesis.yaml", tmp_path / "j.db"
    manifest.write_text(FS_POLICY)
    with RawSession(proxy_argv("files", manifest, journal, [*fs_server, str(root)])) as s:
        s.handshake()
        assert not s.call(1, "write_file", {"path": str(root / "a.txt"), "content": "v1\n"}).get("isError")
        time.sleep(1.05)  # the log shows seconds
        assert not s.call(2, "write_file", {"path": str(root / "b.txt"), "content": "v2\n"}).get("isError")
    time.sleep(1.05)
    flags = ["--manifest", str(manifest), "--journal", str(journal)]
    run = cli("list", "--runs", "--json", *flags)
    [r] = json.loads(run.stdout)
    assert cli("undo", r["id"][:8], "--only", "1", *flags).returncode == 0  # the older action changes last
    out = cli("watch", "--once", *flags)
    assert out.returncode == 0, out.stdout + out.stderr
    times = re.findall(r"^(\d\d:\d\d:\d\d) ", out.stdout, re.M)
    assert len(times) == 2 and len(set(times)) == 2 and times == sorted(times), out.stdout


def test_watch_names_the_journal_in_its_approve_command(tmp_path, fs_server):
    """Pointed at a journal, the approve command watch prints for a held call names it, as
    `gates` does: without it, copied into a shell, it looks in the user's own journal (new user
    round 15, #6)."""
    root = tmp_path / "root"
    root.mkdir()
    manifest, journal = tmp_path / "synartesis.yaml", tmp_path / "j.db"
    manifest.write_text(FS_POLICY)
    with RawSession(proxy_argv("files", manifest, journal, [*fs_server, str(root)])) as s:
        s.handshake()
        assert s.call(1, "write_file", {"path": str(root / "new.txt"), "content": "x\n"}).get("isError")
    out = cli("watch", "--once", "--journal", str(journal))
    assert out.returncode == 0, out.stdout + out.stderr
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("held "))
    assert re.search(r"approve [0-9a-f]{8} --journal \S+", line), line


def test_watch_once_with_no_journal_is_a_configuration_error_as_for_the_other_commands(tmp_path):
    """A new user's round 31, 10a: `watch --once` (and piped `watch`) found no journal and
    exited 0, where gates, undo, history and list exit 2, as the README says of watch too."""
    jp = tmp_path / "none.db"
    for args in (["watch", "--once"], ["watch"]):  # piped: one frame
        res = cli(*args, "--journal", str(jp))
        assert res.returncode == 2, (args, res.returncode, res.stdout, res.stderr)
        assert f"no journal at {jp} yet" in res.stderr and "Traceback" not in res.stderr, res.stderr
        assert "--journal" in res.stderr, res.stderr  # where it took the location from
    assert not jp.exists()

"""A new user's finding (round 16, #13): `synartesis close` with no active run said "there is
no run to act on" and exited 2, a usage error; nothing to do is exit 1 (README, exit codes)."""

from __future__ import annotations

from helpers import cli, files_run


def test_close_with_no_active_run_says_so_and_exits_1(tmp_path, fs_server):
    _, flags = files_run(tmp_path, fs_server, {"a.txt": "x\n"},
                         [("write_file", {"path": "{root}/a.txt", "content": "y\n"})])
    out = cli("close", *flags)
    assert out.returncode == 1 and "nothing to close" in out.stdout, out.stdout + out.stderr
    assert cli("close", "nosuchrun", *flags).returncode == 2  # naming a run that is not there is a usage error

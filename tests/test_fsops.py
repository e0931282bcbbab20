"""fsops: private folders whatever the umask, tightening our own files, and temporary files
that never outlive their write (issue 9 items 11 and 12)."""

from __future__ import annotations

import os
import stat
import sys
import time
from pathlib import Path

import helpers
import pytest

from synartesis import fsops

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX modes")


@pytest.fixture
def umask000():
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_every_folder_we_create_is_0700_even_at_umask_000(tmp_path, umask000):
    leaf = tmp_path / "a" / "b" / "c"
    fsops.ensure_private_dir(leaf)
    assert [mode(tmp_path / p) for p in ("a", "a/b", "a/b/c")] == [0o700, 0o700, 0o700]


def test_an_existing_parent_is_not_tightened(tmp_path, umask000):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    fsops.ensure_private_dir(shared / "ours")
    assert mode(shared) == 0o755 and mode(shared / "ours") == 0o700


def test_atomic_write_creates_private_parents_and_a_0600_file(tmp_path, umask000):
    target = tmp_path / "x" / "y" / "synartesis.yaml"
    fsops.atomic_write(target, b"version: 1\n")
    assert mode(target) == 0o600 and mode(target.parent) == 0o700 and mode(target.parent.parent) == 0o700


def test_a_backup_is_0600_whatever_the_umask(tmp_path, umask000):
    from synartesis.paths import Env

    env = Env(home=tmp_path, environ={"SYNARTESIS_HOME": str(tmp_path / "syn")}, platform="linux", cwd=tmp_path)
    b = fsops.backup(env, tmp_path / "c.json", b"{}")
    assert mode(b) == 0o600 and mode(b.parent) == 0o700 and mode(b.parent.parent) == 0o700


def test_tighten_reports_and_fixes_looser_modes_only(tmp_path):
    f = tmp_path / "installed.json"
    f.write_text("{}")
    f.chmod(0o644)
    assert fsops.tighten(f, 0o600) == 0o644 and mode(f) == 0o600
    assert fsops.tighten(f, 0o600) is None
    f.chmod(0o400)
    assert fsops.tighten(f, 0o600) is None and mode(f) == 0o400  # stricter is fine
    assert fsops.tighten(tmp_path / "missing", 0o600) is None


def _dead_pid() -> int:
    p = helpers.spawn([sys.executable, "-c", "pass"])
    p.wait(timeout=30)
    return p.pid


def test_leftover_temps_are_the_ones_whose_writer_is_gone(tmp_path):
    target = tmp_path / ".claude.json"
    target.write_text("{}")
    dead = tmp_path / f"..claude.json.{_dead_pid()}.ab12cd34.synartesis-tmp"
    live = tmp_path / f"..claude.json.{os.getppid()}.ef56gh78.synartesis-tmp"
    legacy = tmp_path / "..claude.json.k3j4h5g6.synartesis-tmp"
    other = tmp_path / ".other.json.1.ab12cd34.synartesis-tmp"
    for p in (dead, live, legacy, other):
        p.write_text("partial")
    old = time.time() - 120
    os.utime(legacy, (old, old))
    assert fsops.leftover_temps(target) == sorted([dead, legacy])
    os.utime(live, (time.time() - 7200,) * 2)  # a pid alive for hours may have been reused
    assert live in fsops.leftover_temps(target)
    assert fsops.remove_leftovers(fsops.leftover_temps(target)) and not dead.exists() and not legacy.exists()
    assert other.exists()


def test_a_failed_replace_leaves_no_temp_file(tmp_path):
    from synartesis.errors import ConflictError

    target = tmp_path / "mcp.json"
    target.write_text("{}")

    def client_rewrites() -> None:
        target.write_text('{"changed": 1}')

    with pytest.raises(ConflictError):
        fsops.replace_checked(target, b"{}", b'{"a": 1}', before_compare=client_rewrites)
    assert not list(tmp_path.glob("*.synartesis-tmp"))


def test_ctrl_c_during_the_write_leaves_no_temp_file(tmp_path):
    target = tmp_path / "mcp.json"
    target.write_text("{}")

    def interrupted() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        fsops.replace_checked(target, b"{}", b'{"a": 1}', before_compare=interrupted)
    assert not list(tmp_path.glob("*.synartesis-tmp")) and target.read_text() == "{}"

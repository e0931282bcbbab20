"""Adversarial review, round 5 — `uninstall --from-backup` with odd sidecars (``<backup>.meta.json``) in synartesis's own
backups folder:

- an ``original`` holding a NUL character: a traceback (ValueError: embedded null byte),
  dry run or not. Expected: exit 2 (or 1), a message, nothing written.
- a ``client`` that is not text: the restore copies it into installed.json's backups list, and
  from then on every command that reads the record (status, install, uninstall) refuses it as
  damaged (exit 2) — synartesis bricks its own record. Expected: the restore refuses the sidecar,
  or records text; `status` still works afterwards."""
import json

import pytest
from helpers import cli


def _backup(fake_home, meta):
    backups = fake_home / ".synartesis" / "backups"
    backups.mkdir(parents=True, mode=0o700)
    bak = backups / "x.bak"
    bak.write_text('{"b": 2}\n')
    (backups / "x.bak.meta.json").write_text(json.dumps(meta))
    return bak


@pytest.mark.parametrize("dry", [True, False])
def test_a_sidecar_naming_a_path_with_a_nul_is_refused_without_a_traceback(fake_home, tmp_path, dry):
    target = fake_home / "cfg.json"
    target.write_text('{"a": 1}\n')
    bak = _backup(fake_home, {"original": f"{target}\x00x"})
    out = cli("uninstall", "--from-backup", str(bak), *(["--dry-run"] if dry else []), "--yes", cwd=tmp_path, timeout=60)
    assert "Traceback" not in out.stdout + out.stderr, out.stderr[-600:]
    assert out.returncode in (1, 2), out
    assert target.read_text() == '{"a": 1}\n'


def test_a_sidecar_whose_client_is_not_text_does_not_break_the_install_record(fake_home, tmp_path):
    target = fake_home / "cfg.json"
    target.write_text('{"a": 1}\n')
    bak = _backup(fake_home, {"original": str(target), "client": {"a": 1}})
    cli("uninstall", "--from-backup", str(bak), "--yes", cwd=tmp_path, timeout=60)
    status = cli("status", cwd=tmp_path, timeout=60)
    assert status.returncode == 0, status.stdout + status.stderr

"""Adversarial review, round 4 — `uninstall --from-backup` on a backup in the backups folder whose sidecar's `original` is not
a path string (a number, a list) prints a traceback; a relative `original` is written relative to
the shell's folder. Expected: a message naming the backup, exit 2, nothing written."""
import json

import pytest
from helpers import cli


@pytest.mark.parametrize("original", [5, ["a"], {"p": 1}, "relative.json"])
def test_a_sidecar_with_an_odd_original_is_refused_with_a_message(fake_home, tmp_path, original):
    backups = fake_home / ".synartesis" / "backups"
    backups.mkdir(parents=True, mode=0o700)
    bak = backups / "x.bak"
    bak.write_text("{}")
    (backups / "x.bak.meta.json").write_text(json.dumps({"original": original}))
    work = tmp_path / "work"
    work.mkdir()
    for args in (("--dry-run",), ("--yes",)):
        out = cli("uninstall", "--from-backup", str(bak), *args, cwd=work)
        assert "Traceback" not in out.stdout + out.stderr, out.stderr[-600:]
        assert out.returncode == 2, (args, out.stdout + out.stderr)
    assert list(work.iterdir()) == []

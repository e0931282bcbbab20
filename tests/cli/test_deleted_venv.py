"""A new user's round 31, #5: every wrapped entry names the synartesis executable of the venv it
was installed from; delete or move that venv and every client's servers stop starting. status
said "run `synartesis install` again", which changes nothing (every entry is already wrapped).
What works, and what status now says: `synartesis uninstall` from any synartesis (it restores
from the install record, whichever executable runs it), then `synartesis install` from the one
you keep."""

from __future__ import annotations

from pathlib import Path

from installkit import cli, fake_proxy, place

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "configs" / "cursor" / "tapppi-tabs-only.json"


def test_after_the_venv_is_deleted_status_gives_advice_that_works(fake_home, tmp_path):
    cfg = place(fake_home, "cursor", FIXTURE.read_bytes())
    old = fake_proxy(tmp_path / "old-venv")
    assert cli(tmp_path, "install", "--yes", "--no-start", "--proxy-path", old).returncode == 0
    Path(old).unlink()
    st = cli(tmp_path, "status")
    drift = [x for x in st.stdout.splitlines() if "no longer exists" in x]
    assert drift and all("synartesis uninstall" in d and "install again" not in d for d in drift), st.stdout
    new = fake_proxy(tmp_path / "new-venv")
    again = cli(tmp_path, "install", "--yes", "--no-start", "--proxy-path", new)
    assert old in cfg.read_text()  # install alone does not re-point an entry already wrapped
    assert again.returncode == 0
    assert "which no longer exists" in again.stdout and "`synartesis uninstall`" in again.stdout, again.stdout
    assert cli(tmp_path, "uninstall", "--yes").returncode == 0  # the advice: uninstall, then install
    assert cfg.read_bytes() == FIXTURE.read_bytes()
    assert cli(tmp_path, "install", "--yes", "--no-start", "--proxy-path", new).returncode == 0
    assert new in cfg.read_text() and old not in cfg.read_text()
    assert not [x for x in cli(tmp_path, "status").stdout.splitlines() if "no longer exists" in x]

"""A new user's round 31, #9g: after writing, `install --yes` and `uninstall --yes` still said
"will change" / "will be restored"; dry runs keep "will"."""

from __future__ import annotations

from pathlib import Path

from installkit import cli, fake_proxy, place

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "configs" / "cursor" / "tapppi-tabs-only.json"


def _line(out: str, path: Path) -> str:
    [line] = [x for x in out.splitlines() if x.startswith(("• ", "· ")) and f"{path}" in x and "written" not in x]
    return line


def test_install_and_uninstall_say_changed_and_restored_after_writing(fake_home, tmp_path):
    cfg = place(fake_home, "cursor", FIXTURE.read_bytes())
    proxy = fake_proxy(tmp_path)
    dry = cli(tmp_path, "install", "--dry-run", "--no-start", "--proxy-path", proxy)
    assert "will change" in _line(dry.stdout, cfg), dry.stdout
    res = cli(tmp_path, "install", "--yes", "--no-start", "--proxy-path", proxy)
    assert res.returncode == 0, res.stdout + res.stderr
    line = _line(res.stdout, cfg)
    assert "will" not in line and f"{cfg} (Cursor): changed — " in line, res.stdout
    dry = cli(tmp_path, "uninstall", "--dry-run")
    assert "will be restored" in _line(dry.stdout, cfg), dry.stdout
    res = cli(tmp_path, "uninstall", "--yes")
    assert res.returncode == 0, res.stdout + res.stderr
    line = _line(res.stdout, cfg)
    assert "will" not in line and line.endswith(f"{cfg}: restored"), res.stdout
    # each entry's line reads true once written too (fresh user round 31b: "… entry goes")
    assert "original entry put back" in res.stdout and "comes back" not in res.stdout, res.stdout
    assert cfg.read_bytes() == FIXTURE.read_bytes()

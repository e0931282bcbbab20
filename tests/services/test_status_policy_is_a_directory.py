"""Adversarial review, round 5 — `status` with a directory where the policy goes: exit 1 and no coverage at all, where a
policy that does not load (round 4) is reported as no coverage with exit 2 (a configuration
error; exit 1 means halted or refused)."""
from helpers import cli


def test_status_treats_a_policy_that_is_a_directory_as_a_policy_that_does_not_load(fake_home, tmp_path):
    home = fake_home / ".synartesis"
    home.mkdir(mode=0o700)
    (home / "synartesis.yaml").mkdir()
    out = cli("status", cwd=tmp_path, timeout=60)
    assert "Traceback" not in out.stdout + out.stderr
    assert out.returncode == 2, (out.returncode, out.stdout, out.stderr)

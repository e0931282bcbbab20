"""Adversarial review, round 4 — `status` with a policy every proxy and `check` refuse: not UTF-8 → exit 0 and no policy
error ("covered" as if it loaded); nested past the YAML loader's depth → a RecursionError
traceback. `check --manifest` names both (exit 2). Expected: status exit 2, `policy_error` set,
no traceback (as for an unknown key since 8f86a35)."""
import json

import pytest
from helpers import cli

POLICIES = {
    "not-utf8": b"version: 1\nservers:\n  s\xff: {command: x}\ntools: []\n",
    "too-deep": b"version: 1\nx: " + b"[" * 5000 + b"]" * 5000 + b"\n",
}


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_status_says_the_policy_does_not_load(fake_home, tmp_path, name):
    home = fake_home / ".synartesis"
    home.mkdir(mode=0o700)
    (home / "synartesis.yaml").write_bytes(POLICIES[name])
    check = cli("check", "--manifest", str(home / "synartesis.yaml"), cwd=tmp_path, timeout=60)
    assert check.returncode == 2 and "Traceback" not in check.stderr, check.stdout + check.stderr
    out = cli("status", "--json", cwd=tmp_path, timeout=60)
    assert "Traceback" not in out.stderr, out.stderr[-500:]
    assert out.returncode == 2, out.stdout + out.stderr
    assert json.loads(out.stdout)["policy_error"], out.stdout

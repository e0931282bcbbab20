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


def test_status_with_a_policy_that_does_not_load_says_so_once_and_claims_no_held_calls(fake_home, tmp_path):
    """A new user's round 31, #6: every server also got "drift: no server 'files' in …: every
    call is held (fail-closed)"; the server is in the file, and its proxy refuses to start."""
    from pathlib import Path

    from installkit import cli as run_cli, install, make_env, place

    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "configs" / "cursor" / "seanb4t-mixed-tabs-spaces.json"
    place(fake_home, "cursor", fixture.read_bytes())
    env = make_env(fake_home)
    plan, result = install(env, tmp_path)
    assert result.ok and plan.entries
    policy = fake_home / ".synartesis" / "synartesis.yaml"
    policy.write_text(policy.read_text().replace("    class: ", "    clas: ", 1))
    out = run_cli(tmp_path, "status")
    assert out.returncode == 2, out.stdout + out.stderr
    text = out.stdout
    assert "every call is held" not in text and "fail-closed" not in text and "no server" not in text, text
    head = [line for line in text.splitlines() if "does not load" in line and "covered" not in line]
    assert len(head) == 1 and head[0].startswith("✗ the policy does not load: "), text
    assert "unknown key 'clas'" in head[0]
    drift = [line for line in text.splitlines() if "drift:" in line]
    assert drift and all("refuses to start" in d and "does not load" not in d for d in drift), text
    doc = json.loads(run_cli(tmp_path, "status", "--json").stdout)
    assert not any("every call is held" in d for s in doc["servers"] for d in s["drift"])

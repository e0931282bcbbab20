"""serve's listening rules: what counts as loopback, which Host and Origin values are accepted,
and the token file."""

from __future__ import annotations

import stat

import pytest

from synartesis.errors import SynartesisError
from synartesis.paths import Env
from synartesis.serve.runner import allowed_hosts, allowed_origins, is_loopback
from synartesis.serve.token import load_or_create_token, token_matches, token_path


def test_loopback_is_127_slash_8_ipv6_one_and_localhost():
    for host in ("127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"):
        assert is_loopback(host), host
    for host in ("0.0.0.0", "::", "192.168.1.5", "example.com", "10.0.0.1"):
        assert not is_loopback(host), host


def test_hosts_and_origins_allowed():
    hosts = allowed_hosts("127.0.0.1", 8420, ["mcp.lan", "box:9000"])
    assert {"127.0.0.1:8420", "localhost:8420", "[::1]:8420", "mcp.lan:8420", "mcp.lan", "box:9000"} <= hosts
    assert "evil.example:8420" not in hosts
    wide = allowed_hosts("0.0.0.0", 8420, [])
    assert "0.0.0.0:8420" not in wide and "127.0.0.1:8420" in wide
    assert allowed_hosts("192.168.1.5", 1, []) == {"192.168.1.5:1"}
    origins = allowed_origins(hosts, tls=True, extra=["https://app.example/"])
    assert "https://127.0.0.1:8420" in origins and "https://app.example" in origins
    assert "http://127.0.0.1:8420" not in origins


def test_the_token_is_32_random_bytes_in_a_0600_file_and_a_weak_one_is_refused(tmp_path):
    env = Env(home=tmp_path, environ={"SYNARTESIS_HOME": str(tmp_path / "syn")})
    token, made = load_or_create_token(env)
    assert made and len(token) >= 43
    path = token_path(env)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert load_or_create_token(env) == (token, False)
    assert token_matches(token, f"Bearer {token}") and token_matches(token, f"bearer {token}")
    assert not token_matches(token, f"Bearer {token}x") and not token_matches(token, token)
    assert not token_matches(token, None) and not token_matches(token, "Basic " + token)
    path.write_text("short\n")
    with pytest.raises(SynartesisError):
        load_or_create_token(env)

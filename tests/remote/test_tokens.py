"""The token store: a 0600 file in a 0700 folder, or the keychain with a pointer file."""

from __future__ import annotations

import json
import os
import stat

import keyring
import pytest
from keyring.backend import KeyringBackend

from synartesis.errors import SynartesisError
from synartesis.paths import Env
from synartesis.remote.tokens import TokenRecord, TokenStore


class DictKeyring(KeyringBackend):
    """An in-process keychain (no OS keychain exists on a CI machine)."""

    priority = 10

    def __init__(self) -> None:
        super().__init__()
        self.items: dict = {}

    def get_password(self, service, username):
        return self.items.get((service, username))

    def set_password(self, service, username, password):
        self.items[(service, username)] = password

    def delete_password(self, service, username):
        from keyring.errors import PasswordDeleteError
        if (service, username) not in self.items:
            raise PasswordDeleteError(username)
        del self.items[(service, username)]


def record(name="notes") -> TokenRecord:
    return TokenRecord(server=name, url="https://mcp.example/mcp", token_endpoint="https://as.example/token",
                       client={"client_id": "cid", "client_secret": "csecret"}, access_token="at_secret_1",
                       refresh_token="rt_secret_1", expires_at=None)


def env(tmp_path, mode="file") -> Env:
    return Env(home=tmp_path, environ={"SYNARTESIS_HOME": str(tmp_path / "syn"), "SYNARTESIS_TOKEN_STORE": mode})


def test_the_file_store_is_0600_in_a_0700_folder_and_round_trips(tmp_path):
    store = TokenStore(env(tmp_path))
    where = store.put(record())
    path = store.path("notes")
    assert where == str(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    got = store.get("notes")
    assert got.access_token == "at_secret_1" and got.client["client_secret"] == "csecret"
    os.chmod(path, 0o644)  # someone widened it: the next write narrows it again
    store.put(record())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert store.delete("notes") and not path.exists() and store.get("notes") is None
    assert not store.delete("notes")


def test_the_keychain_holds_the_secrets_and_the_file_only_says_where(tmp_path):
    kr = DictKeyring()
    old = keyring.get_keyring()
    keyring.set_keyring(kr)
    try:
        store = TokenStore(env(tmp_path, "auto"))
        assert store.put(record()).startswith("keychain (")
        pointer = store.path("notes").read_text()
        assert "secret" not in pointer and json.loads(pointer)["store"] == "keyring"
        assert store.get("notes").refresh_token == "rt_secret_1"
        assert store.where("notes").startswith("keychain")
        assert store.delete("notes") and kr.items == {} and not store.path("notes").exists()
    finally:
        keyring.set_keyring(old)


def test_no_keychain_backend_falls_back_to_the_file(tmp_path):
    from keyring.backends import fail
    old = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    try:
        store = TokenStore(env(tmp_path, "auto"))
        assert store.put(record()) == str(store.path("notes"))
        with pytest.raises(SynartesisError):
            TokenStore(env(tmp_path, "keyring")).put(record())
    finally:
        keyring.set_keyring(old)


def test_odd_names_stay_inside_the_folder_and_damage_is_reported(tmp_path):
    store = TokenStore(env(tmp_path))
    for name in ("../../etc/passwd", "a/b", "Сontext7", ""):
        p = store.path(name)
        assert p.parent == store.dir and p.name.endswith(".json")
    assert store.path("a/b") != store.path("a_b")
    store.put(record("x"))
    store.path("x").write_text("{not json")
    with pytest.raises(SynartesisError) as err:
        store.get("x")
    assert "synartesis logout x" in err.value.message
    with pytest.raises(SynartesisError):
        TokenStore(Env(home=tmp_path, environ={"SYNARTESIS_TOKEN_STORE": "vault"}))


def test_expiry_is_judged_with_a_margin():
    r = record()
    r.expires_at = 1000.0
    assert r.expired(now=950.0) and not r.expired(now=900.0)
    r.expires_at = None
    assert not r.expired()
    r.access_token = None
    assert r.expired()

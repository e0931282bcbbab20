"""API keys: saved once, sent only to the model's endpoint, and never found afterwards in the
journal, a log, ``$SYNARTESIS_HOME``, the served page or any answer of the window. With no
keychain (this machine, CI) the key lives in memory only and the page says so; with one it goes
to the keychain."""

from __future__ import annotations

from desktopkit import cards

from synartesis.desktop.keys import SERVICE, KeyStore

KEY = "sk-test-4f9c2e71b0d8a6e3c5f1a9b7d2e8c4f0"


def _files_holding(root, needle: bytes) -> list[str]:
    hits = []
    for p in root.rglob("*"):
        if p.is_file() and not p.is_symlink():
            try:
                if needle in p.read_bytes():
                    hits.append(str(p))
            except OSError:
                pass
    return hits


def test_a_saved_key_is_used_and_then_found_nowhere(files_root, open_window, tmp_path):
    target = files_root / "k.txt"
    target.write_text("before")
    desk, model = open_window([
        {"text": "ok", "tool_calls": [{"name": "write_file", "arguments": {"path": str(target), "content": "after"}}]},
        {"text": "written"},
    ])
    state = desk.get("/api/state")
    assert state["keyStorage"] == "memory" and "memory for this window only" in state["keyNotice"]
    saved = desk.post("/api/keys/custom", {"key": KEY})
    assert saved == {"saved": True, "storage": "memory"}

    conv = desk.post("/api/conversations", {"profile": "custom"})
    desk.post(f"/api/conversations/{conv['id']}/messages", {"text": "write it"})
    conv = desk.wait(conv["id"], lambda c: not c["busy"] and cards(c) and cards(c)[0]["action"])
    assert target.read_text() == "after"
    assert {r["_headers"].get("authorization") for r in model.requests} == {f"Bearer {KEY}"}  # used, where it belongs

    served = [desk.client.get(p).text for p in ("/", "/static/app.js", "/static/style.css", "/api/state",
                                                f"/api/conversations/{conv['id']}", "/api/history", "/api/gates")]
    run = conv["runs"][0]
    served.append(desk.client.get(f"/api/runs/{run}").text)
    served.append(desk.client.get(f"/api/actions/{cards(conv)[0]['action']['id']}").text)
    code, err = desk.stop()
    out = "".join(desk.lines)
    for text in served + [err, out]:
        assert KEY not in text
    assert _files_holding(tmp_path, KEY.encode()) == []  # journal, its WAL, $SYNARTESIS_HOME, everything


def test_the_page_is_told_a_key_is_saved_but_never_sees_it(files_root, open_window):
    desk, _ = open_window([{"text": "hi"}])
    desk.post("/api/keys/openai", {"key": KEY})
    state = desk.get("/api/state")
    assert state["keys"]["openai"] == {"saved": True, "storage": "memory"}
    assert state["keys"]["anthropic"] == {"saved": False, "storage": "memory"}
    assert KEY not in desk.client.get("/api/state").text
    r = desk.client.delete("/api/keys/openai", headers={"origin": desk.base})
    assert r.json() == {"saved": False, "storage": "memory"}


def test_a_profile_that_needs_a_key_says_so_before_sending_anything(files_root, open_window):
    desk, model = open_window([{"text": "never"}], profile="openai")
    conv = desk.post("/api/conversations", {"profile": "openai"})
    desk.post(f"/api/conversations/{conv['id']}/messages", {"text": "hello"})
    conv = desk.wait(conv["id"], lambda c: not c["busy"] and c["items"][-1]["kind"] == "notice")
    assert "needs an API key" in conv["items"][-1]["text"] and model.requests == []


def test_a_base_url_carrying_a_credential_is_refused(files_root, open_window, fake_home):
    desk, _ = open_window([{"text": "hi"}])
    for url in ("http://user:pw@127.0.0.1:9/v1", "https://x.example/v1?api_key=abc123"):
        r = desk.client.put("/api/profiles/custom", json={"baseUrl": url}, headers={"origin": desk.base})
        assert r.status_code == 400 and "credential" in r.json()["error"]
    settings = (fake_home / ".synartesis" / "desktop.json").read_text()
    assert "pw@" not in settings and "abc123" not in settings


class _Keychain:
    """A keychain stand-in with a real keyring backend's interface (priority, get/set/delete)."""

    priority = 5

    def __init__(self) -> None:
        self.items: dict = {}

    def set_password(self, service, user, value):
        self.items[(service, user)] = value

    def get_password(self, service, user):
        return self.items.get((service, user))

    def delete_password(self, service, user):
        self.items.pop((service, user), None)


def test_with_a_keychain_the_key_goes_there_and_the_notice_goes_away(monkeypatch):
    import synartesis.desktop.keys as keys
    chain = _Keychain()
    monkeypatch.setattr(keys, "_keychain", lambda: chain)
    store = KeyStore()
    assert store.storage == "keychain" and store.notice is None
    assert store.save("anthropic", KEY).as_json() == {"saved": True, "storage": "keychain"}
    assert chain.items == {(SERVICE, "anthropic"): KEY} and store.get("anthropic") == KEY
    assert store.forget("anthropic").saved is False and chain.items == {}


def test_without_a_keychain_keys_live_in_memory_only(monkeypatch):
    import synartesis.desktop.keys as keys
    monkeypatch.setattr(keys, "_keychain", lambda: None)
    store = KeyStore()
    assert store.storage == "memory" and "memory" in store.notice
    store.save("openai", KEY)
    assert store.get("openai") == KEY and KeyStore().get("openai") is None  # gone with the window

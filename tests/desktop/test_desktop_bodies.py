"""The window's API under malformed bodies (adversarial review #15): a 400 that says what is
wrong, never a 500 with a Python exception name."""

from __future__ import annotations

import json

import pytest
from desktopkit import Desktop


@pytest.fixture
def desk(tmp_path):
    (tmp_path / "synartesis.yaml").write_text("version: 1\nservers:\n  kv: {}\ntools: []\n")
    d = Desktop("--manifest", str(tmp_path / "synartesis.yaml"), "--journal", str(tmp_path / "j.db"), cwd=tmp_path)
    yield d
    d.stop()


@pytest.mark.parametrize(("method", "path", "body"), [
    ("PUT", "/api/profiles/openai", json.dumps({"baseUrl": ["x"]})),
    ("PUT", "/api/profiles/openai", json.dumps({"model": 5})),
    ("POST", "/api/undo", "[" * 100000 + "]" * 100000),
    ("POST", "/api/undo", '{"run": {"a": 1}}'),
    ("PUT", "/api/conversations/{cid}/servers", json.dumps({"servers": [["x"]]})),
    ("PUT", "/api/conversations/{cid}/profile", json.dumps({"profile": ["x"]})),
], ids=["list-base-url", "number-model", "deep-nesting", "object-run", "list-server-name", "list-profile"])
def test_a_malformed_body_is_a_400_with_a_sentence_not_a_500(desk, method, path, body):
    if "{cid}" in path:
        path = path.format(cid=desk.post("/api/conversations")["id"])
    r = desk.client.request(method, path, content=body,
                            headers={"origin": desk.base, "content-type": "application/json"})
    assert r.status_code == 400, (r.status_code, r.text)
    error = r.json()["error"]
    assert "internal error" not in error and "Error" not in error, error


def test_a_malformed_profile_leaves_the_settings_file_as_it_was(desk, fake_home):
    before = desk.get("/api/state")["profiles"]
    r = desk.client.put("/api/profiles/openai", json={"baseUrl": 5, "model": "m"}, headers={"origin": desk.base})
    assert r.status_code == 400 and "text" in r.json()["error"]
    assert desk.get("/api/state")["profiles"] == before

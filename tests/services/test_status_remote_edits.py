"""status after the user edits a wrapped remote entry (adversarial review #20): the bridge runs
with the url and headers install copied into args/env, so an edit of the entry's own ``url`` or
``headers`` (a rotated token) has no effect; status says so and what to do."""

from __future__ import annotations

import json

from installkit import install, make_env, place
from synartesis.services.status import collect_status


def _rows(env, tmp_path):
    return {r.name: r for r in collect_status(env, system_root=tmp_path / "system").rows}


def test_status_says_an_edited_url_or_header_of_a_bridged_entry_has_no_effect_and_what_to_do(fake_home, tmp_path):
    cfg = place(fake_home, "claude-code", json.dumps({"mcpServers": {
        "keyed": {"type": "http", "url": "https://k.example/mcp", "headers": {"X-Api-Key": "old-literal-value"}},
        "refd": {"type": "sse", "url": "https://r.example/sse", "headers": {"Authorization": "Bearer ${R}"}},
    }}, indent=2))
    env = make_env(fake_home)
    _, result = install(env, tmp_path, client="claude-code")
    assert result.ok
    rows = _rows(env, tmp_path)
    assert not any("no effect" in d for r in rows.values() for d in r.drift), rows  # fresh: nothing stale
    data = json.loads(cfg.read_text())
    data["mcpServers"]["keyed"]["headers"]["X-Api-Key"] = "rotated-literal-value"  # the token rotation
    data["mcpServers"]["refd"]["url"] = "https://moved.example/sse"
    cfg.write_text(json.dumps(data, indent=2))
    rows = _rows(env, tmp_path)
    (keyed,) = [d for d in rows["keyed"].drift if "no effect" in d]
    (refd,) = [d for d in rows["refd"].drift if "no effect" in d]
    assert "headers" in keyed and "url" not in keyed.split("no effect")[0]
    assert "url" in refd and "synartesis install" in refd and "args/env" in refd
    assert "rotated-literal-value" not in keyed and "old-literal-value" not in keyed


def test_putting_an_edited_bridged_entry_back_in_its_remote_form_and_installing_applies_the_edit(fake_home, tmp_path):
    # what the drift message tells the user to do must work
    cfg = place(fake_home, "claude-code", json.dumps({"mcpServers": {
        "keyed": {"type": "http", "url": "https://k.example/mcp", "headers": {"X-Api-Key": "old-literal-value"}}}}))
    env = make_env(fake_home)
    install(env, tmp_path, client="claude-code")
    data = json.loads(cfg.read_text())
    entry = data["mcpServers"]["keyed"]
    entry["headers"]["X-Api-Key"] = "rotated-literal-value"
    for k in ("command", "args"):
        entry.pop(k)
    entry["env"] = {k: v for k, v in entry.get("env", {}).items() if not k.startswith("SYNARTESIS_")}
    if not entry["env"]:
        entry.pop("env")
    entry["type"] = "http"
    cfg.write_text(json.dumps(data, indent=2))
    _, result = install(env, tmp_path, client="claude-code")
    assert result.ok
    rows = _rows(env, tmp_path)
    assert rows["keyed"].state == "wrapped" and not any("no effect" in d for d in rows["keyed"].drift), rows["keyed"]
    assert "rotated-literal-value" in json.dumps(json.loads(cfg.read_text())["mcpServers"]["keyed"]["env"])

"""Adversarial review, round 4 — `status` / `install --dry-run` / `uninstall --dry-run` print a traceback on an install record
whose shapes are wrong (valid JSON, known schema_version). Expected: a message naming the file,
exit 2, the record left as it is (as a record that is not JSON already gets)."""
import json

import pytest
from helpers import cli

ENTRY = {"client": "cursor", "scope": "project", "project": "/x", "target": "/x/.cursor/mcp.json",
         "locator": ["mcpServers", "x"], "record": {}}
RECORDS = {
    "entries-int": {"schema_version": 1, "entries": 5},
    "backups-int": {"schema_version": 1, "entries": [], "backups": 3},
    "client-list": {"schema_version": 1, "entries": [{**ENTRY, "client": ["cursor"]}]},
    "target-int": {"schema_version": 1, "entries": [{**ENTRY, "target": 5}]},
}


@pytest.mark.parametrize("command", [("status",), ("install", "--dry-run"), ("uninstall", "--dry-run")])
@pytest.mark.parametrize("name", sorted(RECORDS))
def test_a_misshapen_install_record_is_named_not_a_traceback(fake_home, tmp_path, name, command):
    home = fake_home / ".synartesis"
    home.mkdir(mode=0o700)
    record = home / "installed.json"
    text = json.dumps(RECORDS[name])
    record.write_text(text)
    out = cli(*command, cwd=tmp_path, timeout=60)
    assert "Traceback" not in out.stdout + out.stderr, out.stderr[-800:]
    assert record.read_text() == text

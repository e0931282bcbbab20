"""Adversarial review, round 5 — `uninstall --yes` prints a traceback on an install record whose entry's ``record.locator`` is
a number (valid JSON, known schema_version; the round-4 shape check looks at the entry's text
fields only, not inside ``record``). Expected: a message naming the file, exit 2, the record
left as it is (as status and the dry runs already do)."""
import json

from helpers import cli

RECORD = {"schema_version": 1, "entries": [{"client": "cursor", "scope": "project", "project": "/x",
                                            "target": "/x/.cursor/mcp.json", "record": {"locator": 5, "op": "wrap"}}]}


def test_uninstall_names_a_misshapen_locator_instead_of_a_traceback(fake_home, tmp_path):
    home = fake_home / ".synartesis"
    home.mkdir(mode=0o700)
    record = home / "installed.json"
    text = json.dumps(RECORD)
    record.write_text(text)
    out = cli("uninstall", "--yes", cwd=tmp_path, timeout=60)
    assert "Traceback" not in out.stdout + out.stderr, out.stderr[-800:]
    assert out.returncode == 2, (out.returncode, out.stdout, out.stderr[-400:])
    assert record.read_text() == text

"""Adversarial review, round 5 — `check` scrubs the client entry's env values from a failing server's stderr only where they
appear verbatim on one line: a server that quotes the token URL-encoded, JSON-escaped, wrapped
over two lines, or at the end of a long line (the stderr tail keeps 500 characters of a line,
so the token is cut and no longer matches) puts the secret, or most of it, on the terminal."""
import json
import sys

import pytest
from helpers import cli

SECRET = 'sk-live/4f9a+1c7e "2b'
CASES = {
    "url-encoded": "import os,sys,urllib.parse as u; sys.stderr.write('GET https://api.example/v1?key=' + u.quote(os.environ['API_TOKEN'], safe='') + ' -> 401' + chr(10)); sys.exit(3)",
    "json-escaped": "import os,sys,json; sys.stderr.write(json.dumps({'error': 'bad token', 'token': os.environ['API_TOKEN']}) + chr(10)); sys.exit(3)",
    "wrapped": "import os,sys; t=os.environ['API_TOKEN']; sys.stderr.write('auth failed for token ' + t[:9] + chr(10) + t[9:] + chr(10)); sys.exit(3)",
    "long-line": "import os,sys; sys.stderr.write('x' * 480 + ' ' + os.environ['API_TOKEN'] + chr(10)); sys.exit(3)",
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_check_does_not_print_the_client_entrys_secret_in_any_spelling(fake_home, tmp_path, case):
    cursor = fake_home / ".cursor"
    cursor.mkdir()
    (cursor / "mcp.json").write_text(json.dumps({"mcpServers": {"svc": {
        "command": sys.executable, "args": ["-c", CASES[case]], "env": {"API_TOKEN": SECRET}}}}))
    out = cli("install", "--client", "cursor", "--no-start", "--yes", cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    c = cli("check", cwd=tmp_path, timeout=120)
    shown = c.stdout + c.stderr
    assert "the server said" in shown or "said" in shown, shown  # the server did start and fail
    # the distinctive middle of the token (9 characters) must not be shown in any form
    for piece in ("4f9a", "1c7e"):
        assert piece not in shown, (case, shown)

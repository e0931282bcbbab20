"""Adversarial review, round 6 — Round 6: `check` on a server that fails to start scrubs its stderr with scrub_pieces, which
URL-quotes every secret (urllib.parse.quote, strict UTF-8). An env value holding a byte that is
not UTF-8 (os.environ decodes it as a lone surrogate; here from `${LATIN}` in the policy's env)
makes quote() raise UnicodeEncodeError: a traceback instead of the start error, and the
traceback chains the original UpstreamError, printing the unscrubbed stderr (the token)."""
import json
import os
import sys

from synartesis.redact import scrub_pieces

from helpers import cli


def test_scrub_pieces_takes_a_value_decoded_with_surrogateescape():
    out = scrub_pieces("rejected token secret-caf\udce9-value", ["secret-caf\udce9-value"])
    assert "secret" not in out


def test_check_reports_a_failing_server_whose_env_holds_a_non_utf8_byte(tmp_path):
    script = "import os, sys; sys.stderr.write('bad credentials: ' + os.environ['API_TOKEN'] + '\\n'); sys.exit(1)"
    manifest = tmp_path / "synartesis.yaml"
    manifest.write_text("version: 1\nservers:\n  kv:\n"
                        f"    command: {json.dumps(sys.executable)}\n"
                        f"    args: {json.dumps(['-c', script])}\n"
                        '    env: {API_TOKEN: "tok-${LATIN}-Zq7abcdefgh"}\n'
                        "tools: []\n")
    env = {**os.environ, "LATIN": "caf\udce9"}  # fsencoded: the child sees the byte 0xE9
    r = cli("check", "--manifest", str(manifest), env=env)
    print(r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stdout + r.stderr
    assert r.returncode == 1
    assert "bad credentials" in r.stdout + r.stderr
    assert "Zq7abcdefgh" not in r.stdout + r.stderr  # the traceback printed the unscrubbed stderr

"""The bridge's credentials stay where the user put them (adversarial review #17, #18): a
``--headers-helper`` command is recorded without the secret it prints, and URL userinfo never
silently replaces an explicit ``Authorization`` header."""

from __future__ import annotations

import json
import os
import sqlite3

import test_bridge
from helpers import RawSession, run, synartesis_argv
from test_bridge import TOKEN, crm_policy

crm = test_bridge.crm  # the fixture: the toy CRM over HTTP, stopped when the test ends


def test_a_headers_helper_command_is_journalled_without_the_secret_it_prints(tmp_path, crm):
    policy, journal = crm_policy(tmp_path), tmp_path / "j.db"
    crm = crm[0]
    helper = "echo '{\"Authorization\": \"Bearer %s\", \"X-H\": \"HELPERSECRET\"}'" % TOKEN
    argv = synartesis_argv("proxy", "--server", "crm", "--manifest", str(policy), "--journal", str(journal),
                           "--url", crm.url, "--headers-helper", helper)
    with RawSession(argv) as s:
        s.handshake()
        assert not s.call(2, "list_customers", {}).get("isError")
        s.close()
    with sqlite3.connect(journal) as db:
        servers = "".join(row[0] for row in db.execute("SELECT servers FROM runs"))
    assert servers and TOKEN not in servers and "HELPERSECRET" not in servers, servers
    launch = json.loads(servers)["crm"]["args"]
    assert "--headers-helper" in launch and launch[launch.index("--headers-helper") + 1].startswith("echo ")


def test_url_userinfo_and_an_explicit_authorization_header_are_refused_together(tmp_path, crm):
    # Before: httpx turned the userinfo into Basic auth over the explicit header, and the 401
    # then blamed the entry's headers.
    crm = crm[0]
    url = crm.url.replace("http://", "http://alex:pw@")
    out = run(synartesis_argv("proxy", "--server", "crm", "--manifest", str(crm_policy(tmp_path)), "--journal",
                              str(tmp_path / "j.db"), "--url", url, "--header", f"Authorization: Bearer {TOKEN}"),
              text=True, timeout=60, input="", capture_output=True, env=dict(os.environ))
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert "user and password" in out.stderr and "Authorization" in out.stderr and "Traceback" not in out.stderr
    assert "pw@" not in out.stderr and TOKEN not in out.stderr

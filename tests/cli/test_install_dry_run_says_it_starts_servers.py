"""A new user's round 21: `install --dry-run` starts the servers it drafts policies for (`npx -y`
may download them), and said so only in the hint about slow servers. The dry run says it up
top, before anything starts; with --no-start (or --json) it does not."""
from installkit import fake_proxy, place

import helpers

CONFIG = '{"mcpServers": {"tool": {"command": "definitely-not-a-command-xyz", "args": []}}}'
SAID = "each server that needs a policy is started once"


def test_the_dry_run_says_it_starts_servers_before_it_does(fake_home, tmp_path):
    place(fake_home, "cursor", CONFIG)
    p = helpers.cli("install", "--dry-run", "--timeout", "5", "--proxy-path", fake_proxy(tmp_path), cwd=tmp_path)
    assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
    assert SAID in p.stdout and "--no-start" in p.stdout, p.stdout
    assert p.stdout.index(SAID) < p.stdout.index("did not start"), p.stdout
    for extra in (["--no-start"], ["--json"]):
        q = helpers.cli("install", "--dry-run", *extra, "--timeout", "5", "--proxy-path", fake_proxy(tmp_path), cwd=tmp_path)
        assert SAID not in q.stdout, (extra, q.stdout)

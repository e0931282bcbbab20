"""What a held call would change: `gates` and `approve` read the current state with the rule's
pre-read (the real filesystem server), show a unified diff, and flag production targets."""

from __future__ import annotations

import json

from helpers import FS_POLICY, RawSession, cli, proxy_argv

from synartesis.services.held import production_hits

HELD_POLICY = FS_POLICY.replace('''  - match: "files.write_file"
    class: reversible''', '''  - match: "files.write_file"
    class: reversible
    gate: always''')


def _held(tmp_path, fs_server, folder="notes"):
    root = tmp_path / "root"
    (root / folder).mkdir(parents=True)
    target = root / folder / "todo.txt"
    target.write_text("buy milk\ncall ana\n")
    manifest, journal = tmp_path / "synartesis.yaml", tmp_path / "journal.db"
    manifest.write_text(HELD_POLICY)
    argv = proxy_argv("files", manifest, journal, [*fs_server, str(root)])
    with RawSession(argv) as s:
        s.handshake()
        held = s.call(1, "write_file", {"path": str(target), "content": "buy milk\ncall bo\n"})
        new = s.call(2, "write_file", {"path": str(root / folder / "new.txt"), "content": "x"})
        s.close()
    assert held["isError"] and new["isError"]
    return manifest, journal, target


def test_gates_shows_the_current_state_as_a_diff_beside_the_arguments(tmp_path, fs_server):
    manifest, journal, target = _held(tmp_path, fs_server)
    out = cli("gates", "--manifest", str(manifest), "--journal", str(journal))
    assert out.returncode == 0, out.stderr
    assert "what it would change in content:" in out.stdout
    assert "-call ana" in out.stdout and "+call bo" in out.stdout and " buy milk" in out.stdout
    assert "it does not exist yet" in out.stdout  # the second call would create a file
    assert "PRODUCTION" not in out.stdout
    assert target.read_text() == "buy milk\ncall ana\n"  # only read
    listed = json.loads(cli("gates", "--json", "--manifest", str(manifest), "--journal", str(journal)).stdout)
    assert listed[0]["preview"]["current"] == {"present": True, "value": {"content": "buy milk\ncall ana\n"}}
    assert listed[0]["preview"]["diffs"][0]["argument"] == "content"
    quick = cli("gates", "--no-read", "--manifest", str(manifest), "--journal", str(journal))
    assert quick.returncode == 0 and "what it would change" not in quick.stdout


def test_approve_shows_what_it_lets_through_and_production_targets_are_flagged(tmp_path, fs_server):
    manifest, journal, target = _held(tmp_path, fs_server, folder="prod")
    listed = json.loads(cli("gates", "--json", "--manifest", str(manifest), "--journal", str(journal)).stdout)
    [hit] = listed[0]["preview"]["production"]
    assert (hit["where"], hit["pattern"]) == ("path", "prod") and hit["value"].endswith("/prod/todo.txt")
    out = cli("approve", listed[0]["id"][:8], "--manifest", str(manifest), "--journal", str(journal))
    assert out.returncode == 0, out.stderr
    assert "PRODUCTION" in out.stdout and "+call bo" in out.stdout and "approved files.write_file" in out.stdout


def test_production_patterns_come_from_the_policy_or_the_defaults(tmp_path):
    from synartesis.policy import load_policy
    assert [h.pattern for h in production_hits(None, "files-live", {"p": "/srv/product/olive.txt"})] == ["live"]
    policy = tmp_path / "synartesis.yaml"
    policy.write_text(FS_POLICY + 'production_patterns: ["customer-*"]\n')
    hits = production_hits(load_policy(policy), "prod", {"name": "customer-42"})
    assert [(h.where, h.pattern) for h in hits] == [("name", "customer-*")]
